import { Schema } from 'cordis'
import { count, duration, NAME_PATTERN, toolFilterProblem, unsetGroup } from '@cordis-subagents/shared'
import { DEFAULT_OUTPUT_CORRECTIONS, MAX_OUTPUT_CORRECTIONS } from '@cordis-subagents/agent'
import type { TurnEndPolicy } from '@cordis-subagents/subagents-service'
import type { DelegateOptions } from './call-types.js'
import { SubagentToolError } from './errors.js'

/** Everything a delegation needs (see `DelegateOptions`), plus the name the model sees. */
export interface Config extends DelegateOptions {
  toolName: string
  /** `sync`: the call returns the child's answer. `background`: it returns a handle at once; the answer comes later. */
  mode: 'sync' | 'background'
  /** In background mode: whether the parent's turn waits for live children before it ends. */
  onTurnEnd: TurnEndPolicy
  /** In background mode: what a turn that ends on its answer with results unread does (`feed`: one more step, within maxSteps). */
  unreadResults?: 'report' | 'feed'
  /** Whether agents at depth >= 1 (children) see the tool too. false: only depth-0 agents have it. */
  nested: boolean
  /** A team tool: the agent definition (ctx.agentDefinitions) whose team this tool delegates to (see src/team/). */
  agent?: string
  /** A team tool's members also get `<toolName>_tasks` and `<toolName>_post` (a team that talks, see src/team/talk.ts). */
  talk?: boolean
}

// Optional groups and lists are `unsetGroup`s: schemastery would otherwise turn an omitted object into `{}` and an
// omitted toolFilter into `{ allow: [] }`, which hides every tool; and Koishi's console renders them.
/** A blank persona or model would pass here and fail every call; reject it at load instead. */
const NOT_BLANK = /\S/


/**
 * 64 KiB, about 16k tokens: a complete report from a child, and several of them fit a parent's
 * context window. 1 MiB (the old default) was about 260k tokens from one delegation.
 */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
/** Room under ctx.tools' result cap for the truncation note, a headline and the diagnostic (≤ 4 KiB). */
export const NOTE_ROOM_BYTES = 8 * 1024

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  provider: Schema.string().pattern(NAME_PATTERN).description('Name of the subagent provider this tool delegates to (e.g. `spawn`, `fork`, `acp`). Required unless `agent` is set.'),
  agent: Schema.string().pattern(NAME_PATTERN).description('A team tool: the agent definition (@cordis-subagents/definitions) whose team it delegates to. The model picks a member by name; each member runs on its own definition\'s provider, soul, uses, budget and model.'),
  toolName: Schema.string().pattern(NAME_PATTERN).default('subagent').description('Name of the tool the model sees. Must be unique across the app.'),
  agentOptions: unsetGroup(Schema.object({
    model: Schema.string().pattern(NOT_BLANK).description('Model ref for the child (`name` or `name:modelId`). Default: the parent\'s model.'),
  }).description('Options for the child agent.')),
  persona: Schema.string().pattern(NOT_BLANK).role('textarea').description('System prompt of the child. Default: the provider\'s.'),
  toolFilter: unsetGroup(Schema.object({
    allow: unsetGroup(Schema.array(String).description('Only these tools (of the parent\'s) are visible to the child.')),
    deny: unsetGroup(Schema.array(String).description('These tools are hidden from the child.')),
  }).description('Narrows the tools the child can use. It can never see more than its parent.')),
  maxDepth: count().description('Deepest allowed child depth (root agents are depth 0). Lowers the subagents service\'s maxDepth (default 3), never raises it.'),
  budget: unsetGroup(Schema.object({
    maxSteps: count().description('Model calls of each child and everything below it.'),
    maxTokens: count().description('Tokens (input + output) of each child and everything below it.'),
    maxToolCalls: count().description('Tool calls of each child and everything below it.'),
    maxWallMs: count().description('Wall time of each child, its children included (ms). Unlike `timeout`, it is a budget its children share.'),
    maxChildren: count().description('Delegations below each child.'),
    maxConcurrent: count({ min: 1 }).description('Children of one parent live at once through this tool (lowers the service\'s maxConcurrentPerParent).'),
    maxDepth: count().description('Deepest depth below each child.'),
  }).description('Limits of each child\'s tree, carved from what the calling agent has left (a child never gets more than its parent has left).')),
  // Node fires a timer longer than 2^31-1 ms at once, so a larger timeout would cancel every call.
  timeout: duration().default(30 * 60_000).description('Milliseconds before a delegation is cancelled; 0 means no limit (at most 2147483647, about 24.8 days).'),
  resume: Schema.boolean().description('Ask the provider to continue this parent\'s earlier child session instead of a fresh child (provider-acp with `resume: request`; `false` opts out of `resume: per-parent`). Providers that cannot resume ignore it.'),
  maxOutputBytes: count({ min: 1 }).default(DEFAULT_MAX_OUTPUT_BYTES).description('Largest child output (UTF-8 bytes) returned to the parent; longer output is truncated with a note. Default 64 KiB (about 16k tokens). Never more than ctx.tools\' result cap allows, less room for the notes.'),
  mode: Schema.union(['sync', 'background']).default('sync').description('`sync`: the call returns the child\'s answer. `background`: the call returns at once with a handle (`bg-1`, …); the answer is delivered later (see subagent-tool/control for the wait / status / cancel / send tools).'),
  nested: Schema.boolean().default(false).description('Children see this tool too, so they can delegate further (within `maxDepth` and the service\'s limits). Default false: only agents at depth 0 have it, and a child neither lists it nor can call it.'),
  questions: Schema.union(['answer', 'escalate']).default('answer').description('When a child asks a question (it parks): `answer` gives the question to the calling agent\'s model, which answers with `subagent_reply` (subagent-tool/control); `escalate` suspends this tool call in turn, so the question rides up to the caller\'s own parent (or the host, at the root). `answer` escalates when the caller has no reply verb; a background call can only `answer`.'),
  reattach: Schema.boolean().default(false).description('Reattach by task key: a call of the same task (same calling agent, provider, model, persona and prompt) while an earlier one is running, parked, or ended `completed` / `closed` gets that child\'s result or question instead of a second child. Off by default: identical calls in one step (sampling) each get a child.'),
  talk: Schema.boolean().description('A team tool (`agent`): the members it starts also get `<toolName>_tasks` (a task list shared by the members of one coordinator run: add, claim exactly once, complete, list) and `<toolName>_post` (a message to a sibling\'s inbox). Default off.'),
  budgetNote: Schema.boolean().description('The child\'s model sees its remaining budget (steps, tool calls, tokens, time: the limits that apply to it) in a short note after its system prompt, rebuilt every step, and is told to wrap up when 20 % or less of a limit is left or on its last step. The hard limits do not change. In-process providers (spawn, fork) and our served hosts (serve-acp, serve-a2a); a third-party agent ignores it.'),
  tellParent: Schema.boolean().description('The child gets a `tell_parent` tool: a message (at most 2,000 characters, 20 per child) delivered to this agent\'s model before its next step, labelled with the child\'s handle id; the child does not pause. In-process providers (spawn, fork) and our served hosts (serve-acp, serve-a2a); a third-party agent ignores it.'),
  output: unsetGroup(Schema.object({
    schema: Schema.dict(Schema.any()).required().description('A JSON Schema with `type: \'object\'` at its root (at most 16 KiB of JSON, 16 levels deep).'),
    maxCorrections: count({ max: MAX_OUTPUT_CORRECTIONS }).default(DEFAULT_OUTPUT_CORRECTIONS).description('Correction messages an in-process child gets before it ends `invalid_output`.'),
  }).description('A typed result: the child must answer with a JSON value matching `schema`; the tool result carries it as `structured` (and its JSON as text). A bad schema fails the load (`INVALID_OUTPUT_SCHEMA`).')),
  unreadResults: Schema.union(['report', 'feed']).description('Background mode: results of this tool that sit delivered but unread in the parent\'s inbox when its turn is about to end on a typed answer (an agent with an output schema; a turn that answers in text already takes one more step for waiting messages while a step is left). `report` (default): the turn ends and they are reported unread (the run\'s `children`, the live view), read at its next turn. `feed`: the turn takes exactly one more step so its model reads them, once per turn, only with a step left under its maxSteps (never past a limit).'),
  onTurnEnd: Schema.union(['wait', 'end']).default('wait').description('Background mode: when the parent would end its turn with children still running, `wait` keeps the turn open until their results are delivered; `end` lets it end (results arrive at its next turn).'),
})

/** An explicit but empty `toolFilter` hides nothing or everything by mistake: refused at load. */
export function checkToolFilter(filter: Config['toolFilter']) {
  if (!filter) return
  const problem = toolFilterProblem(filter, 'config.toolFilter', true)
  if (problem) throw new SubagentToolError('INVALID_CONFIG', `subagent-tool: ${problem}`)
  // A deny list that is empty hides nothing either: the same mistake as `{}`.
  if (filter.allow === undefined && !filter.deny?.length) {
    throw new SubagentToolError('INVALID_CONFIG', 'subagent-tool: config.toolFilter is empty. List tools under `allow` and/or `deny`, '
      + 'or remove `toolFilter` to give the child all of the parent\'s tools.')
  }
}

