import { basename } from 'node:path'
import { CORE_SCHEMA, load } from 'js-yaml'
import { checkDefinition } from '../check.js'
import { DefinitionError } from '../errors.js'
import type { AgentDefinition, DefinitionInput } from '../types.js'

/** Largest agent file read (front matter and prompt): 256 KiB. */
export const MAX_AGENT_FILE_BYTES = 256 * 1024

/** How a directory's files become definitions (the entry's config). */
export interface ClaudeMapping {
  /** The provider every agent of the directory runs on. */
  provider: string
  /** Claude Code tool names (`Read`, `Grep`, …) to the names of this app's tools; a name not listed is kept as written. */
  tools: Record<string, string>
  /** Claude Code model aliases (`sonnet`, `opus`, `haiku`, or a full id) to this app's model refs; an alias not listed is ignored. */
  models: Record<string, string>
}

/**
 * One Claude Code agent file (`---` YAML front matter `---`, then the system prompt) as a definition:
 * `name` → the name (default: the file name without `.md`), `description` → `does`, `tools` (a
 * comma-separated string or a list) → `uses.allow` through `mapping.tools`, `model` → `model` through
 * `mapping.models` (`inherit`, or an alias not mapped, keeps the parent's model), the body → `soul`
 * (blank: the provider's default). No team: a Claude agent does not delegate.
 */
export function parseAgentFile(file: string, text: string, mapping: ClaudeMapping, baseDir: string): AgentDefinition {
  const fail = (why: string): never => { throw new DefinitionError('AGENT_FILE', `${file}: ${why}`) }
  const match = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text)
  if (!match) fail('no YAML front matter (the file must start with a line `---`, the fields, and a closing `---`).')
  let front: unknown
  try {
    front = load(match![1], { schema: CORE_SCHEMA })
  } catch (error) {
    fail(`the front matter is not valid YAML (${(error as Error).message.split('\n', 1)[0]}).`)
  }
  if (typeof front !== 'object' || front === null || Array.isArray(front)) fail('the front matter is not a mapping of fields.')
  const fields = front as Record<string, unknown>
  const name = fields.name ?? basename(file).replace(/\.md$/i, '')
  if (typeof name !== 'string') fail('`name` is not a string.')
  if (typeof fields.description !== 'string') fail('`description` (what the agent is for) is required.')
  const input: DefinitionInput = { does: fields.description as string, provider: mapping.provider }
  const tools = toolList(fields.tools, fail)
  if (tools) input.uses = { allow: tools.map((tool) => (Object.hasOwn(mapping.tools, tool) ? mapping.tools[tool] : tool)) }
  const model = typeof fields.model === 'string' ? fields.model.trim() : undefined
  if (model && model !== 'inherit' && Object.hasOwn(mapping.models, model) && mapping.models[model]) input.model = mapping.models[model]
  const body = text.slice(match![0].length).trim()
  if (body) input.soul = body
  return checkDefinition(name as string, input, file, baseDir)
}

function toolList(value: unknown, fail: (why: string) => never): string[] | undefined {
  if (value === undefined || value === null) return undefined
  const list = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : fail('`tools` is neither a comma-separated string nor a list.')
  const names = list.map((tool) => (typeof tool === 'string' ? tool.trim() : fail('`tools` holds a value that is not a tool name.'))).filter(Boolean)
  return names.length ? names : undefined
}
