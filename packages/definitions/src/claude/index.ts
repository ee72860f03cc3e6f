// The `./claude` entry: a directory of Claude Code agent files (`.claude/agents/*.md`) as agent definitions.
export { apply, Config, inject, name, reusable } from './plugin.js'
