import { Schema } from 'cordis'
import { count, NAME_PATTERN } from '@cordis-subagents/shared'
import type { DefinitionInput } from './types.js'

// Optional keys default to `undefined` explicitly: schemastery would otherwise turn an omitted
// object into `{}` and an omitted `uses` into `{ allow: [] }`, which hides every tool.
const unset = undefined as never

/** One agent definition as a config entry writes it (the checks that need the filesystem or other agents come after). */
export const DefinitionSchema: Schema<DefinitionInput> = Schema.object({
  does: Schema.string().required().description('What this agent is for, in one line: the routing description a delegating model sees.'),
  uses: Schema.object({
    allow: Schema.array(String).default(unset).description('Only these tools (of its parent\'s) are visible to it.'),
    deny: Schema.array(String).default(unset).description('These tools are hidden from it.'),
  }).default(unset).description('The tools its child view sees. Omit it to give it every tool of its parent.'),
  soul: Schema.string().role('textarea').description('Its system prompt. Default: the provider\'s.'),
  soulFile: Schema.string().description('A file holding its system prompt (an AGENTS.md works), relative to the config file\'s folder. Not with `soul`.'),
  team: Schema.array(Schema.string().pattern(NAME_PATTERN)).default([]).description('The agents it may delegate to: the only targets of its delegation tool. Empty: no delegation tool.'),
  budget: Schema.object({
    maxSteps: count().description('Model calls of its run and everything below it.'),
    maxTokens: count().description('Tokens (input + output) of its run and everything below it.'),
    maxToolCalls: count().description('Tool calls of its run and everything below it.'),
    maxWallMs: count().description('Wall time of its run, children included (ms).'),
    maxChildren: count().description('Delegations below it.'),
    maxConcurrent: count({ min: 1 }).description('Its children live at once.'),
    maxDepth: count().description('Deepest depth below it (also what bounds a team cycle).'),
  }).default(unset).description('Limits of its tree, carved from what its caller has left.'),
  output: Schema.object({
    schema: Schema.dict(Schema.any()).required().description('A JSON Schema with `type: \'object\'` at its root.'),
    maxCorrections: count({ max: 10 }).description('Corrections an in-process run gets before it ends `invalid_output` (default 2).'),
  }).default(unset).description('A typed result: its answer must be a JSON value matching `schema` (see the subagent-tool README, Typed results).'),
  budgetNote: Schema.boolean().description('Its model sees what is left of its budget (steps, tool calls, tokens, time) in a note rebuilt every step, and is told to wrap up near a limit; the hard limits do not change. Default: the delegating tool load\'s `budgetNote`.'),
  tellParent: Schema.boolean().description('It gets a `tell_parent` tool: a short message to its caller\'s model, delivered before the caller\'s next step, without stopping. Default: the delegating tool load\'s `tellParent`.'),
  model: Schema.string().description('Model ref (`name` or `name:modelId`). Default: its parent\'s model.'),
  provider: Schema.string().pattern(NAME_PATTERN).default('spawn').description('The subagents provider it runs on (spawn, fork, acp, a2a, …).'),
})
