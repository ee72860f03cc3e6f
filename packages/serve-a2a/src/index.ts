import { A2aServer } from './server.js'

export { A2aServer }
export { Config, type AuthMode } from './config.js'
export { ServeA2aError, type ServeA2aCode, refusalRpcCode } from './errors.js'
export { CARD_PATH, JSONRPC_PATH } from './card.js'

export default A2aServer
