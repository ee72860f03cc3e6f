// The face of subagent-tool: the plugin (name, reusable, inject, Config, apply) and the wording it
// gives the model. The tool's work lives in plugin.ts (mount), call.ts (one delegation),
// background.ts (background mode), result.ts (the result text).
export const name = 'subagent-tool'
export const reusable = true
export const inject = ['tools', 'subagents']

export { Config, DEFAULT_MAX_OUTPUT_BYTES } from './config.js'
export { apply } from './plugin.js'
export { describePrompt, describeTool } from './wording.js'
export { continueParked, type InFlight, settleStarted } from './call.js'
export { outcomeResult, type OutcomeContext, type OutcomeOptions } from './outcome-result.js'
export { questionText } from './wording.js'
