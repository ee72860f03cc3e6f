// The ChatLuna bridge: ChatLuna's models as ctx.agents models, our delegation tools as ChatLuna tools.
export { apply, inject, name } from './plugin.js'
export { Config } from './config.js'
export { ChatLunaBridgeError, type ChatLunaBridgeErrorCode } from './errors.js'
