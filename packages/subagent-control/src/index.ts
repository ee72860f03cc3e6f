// Deprecated: the control verbs are `@cordis-subagents/subagent-tool/control` now. This package
// re-exports that entry unchanged for one release; point cordis.yml at the new name.
export { apply, Config, inject, name, reusable } from '@cordis-subagents/subagent-tool/control'
