// The one form: a section per component, in the order a Koishi user reads them (the model first).
import { Schema } from 'cordis'
import { PARTS } from './parts.js'
import { section } from './section.js'

const DESCRIPTIONS: Record<string, string> = {
  model: 'The OpenAI-compatible model agents run on (OpenAI, Ollama, vLLM, OpenRouter, …). Turn it off when another plugin registers the model.',
  agents: 'ctx.agents: the agent runtime (default model, steps, tokens and tool calls per turn, rate limits).',
  tools: 'ctx.tools: the tool registry (the cap on one tool result).',
  subagents: 'ctx.subagents: the delegation service and its deployment-wide limits (depth, children, concurrency).',
  spawn: 'The `spawn` provider: a fresh child agent in this process that does not see the conversation.',
  subagent: 'The `subagent` tool the model calls to delegate `{ description, prompt }` (bound to `spawn` by default).',
  fork: 'The `fork` provider and its tool: a child that starts with a copy of the parent\'s completed turns.',
  acp: 'The `acp` provider and its tool: a child agent subprocess over the Agent Client Protocol (Claude Code, Codex, …). Off by default.',
  a2a: 'The `a2a` provider and its tool: a remote agent over A2A (HTTP). Off by default.',
  checkpoints: 'Durable runs stored in Koishi\'s database (needs a database plugin, e.g. SQLite). Off by default.',
  liveView: 'The standalone live view of the delegation tree (its own page on 127.0.0.1, token in the logged URL). Off by default.',
}

/** The config: one object per section (`model`, `agents`, …), each that component's own config. */
export type Config = Record<string, Record<string, unknown>>

export const Config: Schema<Partial<Config>, Config> = Schema.intersect(PARTS.map((part) => Schema.object({
  [part.key]: section(part.schema, DESCRIPTIONS[part.key], part.enabled),
}).description(part.key))) as Schema<Partial<Config>, Config>
