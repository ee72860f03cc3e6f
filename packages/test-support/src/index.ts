export { eventually, type PollOptions, within } from './wait.js'
export { threadCount } from './threads.js'
export { loaderApp } from './loader-app.js'
export { freePort } from './ports.js'
