// The face of `@cordis-subagents/subagent-tool/control`: the model's verbs for its delegated children,
// a second plugin entry of subagent-tool (name 'subagent-control', reusable, inject, Config, apply).
export { apply, Config, inject, name, reusable } from './plugin.js'
