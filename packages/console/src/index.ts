// The console's face: the service (console.ts) and what its config, errors and views name; the view
// model (store, views, transcripts, actions) another host of the page reuses (koishi-console).
import { SubagentConsole } from './console.js'

export { Config, type Transport } from './config.js'
export { ConsoleError, type ConsoleCode } from './errors.js'
export { CANCEL_REASON, nodeView, treeView } from './node-view.js'
export type { NodeView, TreeView, BudgetUse, ViewHost } from './node-view.js'
export type { TranscriptEntry, TranscriptPage } from './transcript.js'
export { MAX_PAGE } from './transcript.js'
export { TreeStore, type StoreLimits } from './tree-store.js'
export { observeDelegations, transcriptOf } from './model.js'
export { answerRun, cancelRun, sendToRun } from './actions.js'
export { pageJson } from './page-json.js'
export { SubagentConsole }

export default SubagentConsole
