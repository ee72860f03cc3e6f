export { eventually, type PollOptions } from './wait.js'
export { loaderApp } from './loader-app.js'
export { freePort } from './ports.js'
