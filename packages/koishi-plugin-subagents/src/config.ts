// The one form: a section per component, in the order a Koishi user reads them (the model first).
import { Schema } from 'cordis'
import { PARTS } from './parts.js'
import { section } from './section.js'

/** Each section's heading in the console (the fields below it carry the component's own descriptions). */
const TITLES: Record<string, string> = {
  model: 'Model: an OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, OpenRouter, …)',
  agents: 'Agents (ctx.agents): default model, limits per turn, rate limits',
  tools: 'Tools (ctx.tools): the tool registry',
  subagents: 'Delegation (ctx.subagents): limits of every tree',
  spawn: 'Provider spawn: a fresh child agent in this process',
  subagent: 'The subagent tool the model calls (on spawn by default)',
  fork: 'Provider fork and its tool: a child with a copy of the conversation',
  acp: 'Provider acp and its tool: an agent subprocess over ACP (off by default)',
  a2a: 'Provider a2a and its tool: a remote agent over A2A (off by default)',
  checkpoints: 'Checkpoints: durable runs in Koishi\'s database (off by default)',
  chat: 'Answer from the chat: `subagents.run`, a child\'s questions posted to its channel, replies that answer them',
  consolePage: 'The delegation tree as a page of this console (needs @koishijs/plugin-console)',
  liveView: 'Live view: the standalone page of the delegation tree (off by default)',
}

/** The config: one object per section (`model`, `agents`, …), each that component's own config. */
export type Config = Record<string, Record<string, unknown>>

export const Config: Schema<Partial<Config>, Config> = Schema.intersect(PARTS.map((part) => Schema.object({
  [part.key]: section(part.schema, part.enabled),
}).description(TITLES[part.key]))) as Schema<Partial<Config>, Config>
