// The console's face: the service (console.ts) and what its config, errors and views name.
import { SubagentConsole } from './console.js'

export { Config, type Transport } from './config.js'
export { ConsoleError, type ConsoleCode } from './errors.js'
export { CANCEL_REASON } from './node-view.js'
export type { NodeView, TreeView, BudgetUse } from './node-view.js'
export type { TranscriptEntry, TranscriptPage } from './transcript.js'
export { SubagentConsole }

export default SubagentConsole
