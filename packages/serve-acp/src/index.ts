// The plugin that serves an agent of ctx.agents over ACP; `./bin` is the program that runs a config with it.
export { name, inject, apply } from './plugin.js'
export { Config, type AcpTransport } from './config.js'
export { ServeAcpError, type ServeAcpErrorCode } from './errors.js'
export { holdExit } from './stdio.js'
