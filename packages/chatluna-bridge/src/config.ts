import { Schema } from 'cordis'
import type { BudgetLimits } from '@cordis-subagents/agent'
import { count, NAME_PATTERN } from '@cordis-subagents/shared'

export interface Config {
  /** The ctx.agents model name ChatLuna's models go by: a ref `<modelName>:<platform>/<model>`. */
  modelName: string
  /** The ChatLuna model (`<platform>/<model>`) a bare `<modelName>` ref runs on. */
  defaultModel?: string
  /** Which of our tools ChatLuna gets: names, or a prefix with a trailing `*`. Empty: none (models only). */
  tools: string[]
  /** The ctx.agents model of each call's root agent (a spawn child runs on it unless its tool load names one). */
  model?: string
  maxDepth?: number
  budget?: Pick<BudgetLimits, 'maxSteps' | 'maxTokens' | 'maxToolCalls' | 'maxWallMs' | 'maxChildren'>
}

// Optional keys default to `undefined` explicitly (schemastery would make an omitted object `{}`).
const unset = undefined as never

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  modelName: Schema.string().pattern(NAME_PATTERN).default('chatluna')
    .description('The model name ChatLuna\'s models go by in ctx.agents: a child runs on `<modelName>:<platform>/<model>` (e.g. `chatluna:openai/gpt-4o`, as ChatLuna lists the model).'),
  defaultModel: Schema.string().pattern(/^[^/\s]+\/\S+$/)
    .description('The ChatLuna model (`<platform>/<model>`) a bare `<modelName>` ref runs on. Without it a ref must name the model.'),
  tools: Schema.array(String).default(['subagent*'])
    .description('Our delegation tools ChatLuna\'s agent gets, by name or by prefix with a trailing `*` (each loaded subagent-tool, team tools too). Only tools whose input is `{ description, prompt }` (+ `agent`) are bridged. Empty: none.'),
  model: Schema.string()
    .description('The ctx.agents model of the root agent each ChatLuna tool call gets (the parent of the delegation; a spawn child runs on it unless its tool load names a model), e.g. `chatluna:openai/gpt-4o`. Default: the runtime\'s default model.'),
  maxDepth: count()
    .description('Depth ceiling of the delegations ChatLuna starts (its agent is depth 0 of each tree). The deployment\'s ceiling (ctx.subagents, SUBAGENT_MAX_DEPTH) still applies; the lower wins.'),
  budget: Schema.object({
    maxSteps: count().description('Model calls of one call\'s whole tree.'),
    maxTokens: count().description('Tokens (input + output) of one call\'s whole tree.'),
    maxToolCalls: count().description('Tool calls of one call\'s whole tree, ChatLuna\'s call included.'),
    maxWallMs: count().description('Wall time of one call (ms).'),
    maxChildren: count().description('Delegations of one call\'s whole tree.'),
  }).default(unset).description('Limits of each tool call from ChatLuna (its root run and every delegation below it; each call gets them afresh). The runtime\'s own budget lowers them, never raises them.'),
})
