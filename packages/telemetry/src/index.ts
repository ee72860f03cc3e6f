import { Telemetry } from './telemetry.js'

export { Telemetry }
export default Telemetry
export { Config } from './config.js'
export { ARRAY_ATTRIBUTES, ERROR_TYPE, GEN_AI, listValue, OURS } from './attributes.js'
export { headersOf, remoteParent } from './carrier.js'
export { type ExportFailureOptions, type ExportOutcome, failureKind, type SpanExporterLike, warnOnExportFailure } from './export-failures.js'
