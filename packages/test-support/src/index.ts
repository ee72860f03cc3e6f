export { eventually, type PollOptions } from './wait.js'
export { loaderApp } from './loader-app.js'
