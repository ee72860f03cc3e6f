// The face of the Koishi market package: the plugin (name, Config, apply) and its error.
export { apply, name } from './plugin.js'
export { Config } from './config.js'
export { KoishiSubagentsError, type KoishiSubagentsErrorCode } from './errors.js'
