import { Telemetry } from './telemetry.js'

export { Telemetry }
export default Telemetry
export { Config } from './config.js'
export { ARRAY_ATTRIBUTES } from './attributes.js'
export { type ExportFailureOptions, type ExportOutcome, type SpanExporterLike, warnOnExportFailure } from './export-failures.js'
