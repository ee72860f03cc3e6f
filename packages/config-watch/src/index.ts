// The hot-reload plugin for a @cordisjs/loader app, and a clean stop for such an app.
export { name, inject, apply } from './plugin.js'
export { Config } from './config.js'
export { ConfigWatchError, type ConfigWatchErrorCode, type RejectCode } from './errors.js'
export type { CheckResult, Reloading } from './reloader.js'
export { stopLoaderApp } from './stop.js'
