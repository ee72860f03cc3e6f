// The face of subagent-tool: the delegation tool plugin (name, reusable, inject, Config, apply) and the
// wording it gives the model. The control verbs (wait, status, cancel, send, reply, result, continue)
// are this package's second plugin entry, `@cordis-subagents/subagent-tool/control` (src/control/).
export { apply, inject, name, reusable } from './plugin.js'
export { Config, DEFAULT_MAX_OUTPUT_BYTES } from './config.js'
export { describePrompt, describeTool } from './wording.js'
export { asTool, type AsToolOptions } from './team/as-tool.js'
