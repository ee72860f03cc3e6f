import { Telemetry } from './telemetry.js'

export { Telemetry }
export default Telemetry
export { Config } from './config.js'
