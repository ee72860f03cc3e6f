import { Telemetry } from './telemetry.js'

export { Telemetry }
export default Telemetry
export { Config } from './config.js'
export { ERROR_TYPE, GEN_AI, OURS } from './attributes.js'
export { headersOf, remoteParent } from './carrier.js'
