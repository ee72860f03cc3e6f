import { isAbsolute } from 'node:path'
import { type BudgetBreach, checkedQuestion, checkedUsage, type Usage, type WorkCounts } from '@cordis-subagents/shared'
import { AgentError } from './errors.js'
import { acceptSuspension } from './suspension.js'
import type { AgentCheckpoint, ParkedTurnCheckpoint } from './checkpoint.js'
import type { Message, ModelToolCall } from './types.js'

// A checkpoint comes from a database: every field is checked, and only known fields are kept.

const MAX_NAME = 256
const BREACH_NAMES = new Set(['steps', 'tokens', 'toolCalls', 'wallMs', 'children', 'depth'])

type Record_ = Record<string, unknown>

class Problem extends Error {}

function fail(where: string, what: string): never {
  throw new Problem(`${where} ${what}`)
}

function object(value: unknown, where: string): Record_ {
  if (!value || typeof value !== 'object' || Array.isArray(value)) fail(where, 'must be an object')
  return value as Record_
}

function text(value: unknown, where: string, max = Infinity): string {
  if (typeof value !== 'string' || value.length > max) fail(where, max === Infinity ? 'must be a string' : `must be a string of at most ${max} characters`)
  return value
}

function optionalText(value: unknown, where: string): string | undefined {
  return value === undefined || value === null ? undefined : text(value, where, MAX_NAME)
}

function count(value: unknown, where: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) fail(where, `must be an integer >= ${min}`)
  return value
}

function usage(value: unknown, where: string): Usage {
  return checkedUsage(value) ?? fail(where, 'must be a usage { inputTokens, outputTokens } of non-negative integers')
}

function work(value: unknown, where: string): WorkCounts {
  const counts = object(value, where)
  return { steps: count(counts.steps, `${where}.steps`), toolCalls: count(counts.toolCalls, `${where}.toolCalls`), delegations: count(counts.delegations, `${where}.delegations`) }
}

function tallies<T>(value: unknown, where: string, check: (value: unknown, where: string) => T): { own: T; delegated: T } {
  const both = object(value, where)
  return { own: check(both.own, `${where}.own`), delegated: check(both.delegated, `${where}.delegated`) }
}

function breach(value: unknown, where: string): BudgetBreach | undefined {
  if (value === undefined || value === null) return undefined
  const given = object(value, where)
  if (typeof given.budget !== 'string' || !BREACH_NAMES.has(given.budget)) fail(`${where}.budget`, `must be one of ${[...BREACH_NAMES].join(', ')}`)
  if (typeof given.limit !== 'number' || typeof given.spent !== 'number') fail(where, 'must have numeric limit and spent')
  return { budget: given.budget as BudgetBreach['budget'], limit: given.limit, spent: given.spent }
}

function toolCall(value: unknown, where: string): ModelToolCall {
  const call = object(value, where)
  const checked: ModelToolCall = { id: text(call.id, `${where}.id`, MAX_NAME), name: text(call.name, `${where}.name`, MAX_NAME), input: call.input }
  if (!checked.id || !checked.name) fail(where, 'needs a non-empty id and name')
  if (call.invalidInput !== undefined) checked.invalidInput = text(call.invalidInput, `${where}.invalidInput`)
  return checked
}

function message(value: unknown, where: string): Message {
  const given = object(value, where)
  const content = text(given.content, `${where}.content`)
  if (given.role === 'user') return { role: 'user', content }
  if (given.role === 'assistant') {
    if (given.toolCalls === undefined) return { role: 'assistant', content }
    if (!Array.isArray(given.toolCalls)) fail(`${where}.toolCalls`, 'must be an array')
    return { role: 'assistant', content, toolCalls: given.toolCalls.map((call, i) => toolCall(call, `${where}.toolCalls[${i}]`)) }
  }
  if (given.role === 'tool') {
    const result: Message = { role: 'tool', toolCallId: text(given.toolCallId, `${where}.toolCallId`, MAX_NAME), name: text(given.name, `${where}.name`, MAX_NAME), content }
    if (given.isError === true) result.isError = true
    return result
  }
  return fail(`${where}.role`, 'must be user, assistant or tool')
}

/**
 * Walks `messages[from, to)` as a conversation: every tool result answers an open call of the
 * assistant message before it, and nothing else comes before those calls are answered. Returns
 * the calls of the last assistant message still unanswered at `to`, in call order.
 */
function openCalls(messages: readonly Message[], from: number, to: number): ModelToolCall[] {
  let open: Map<string, ModelToolCall> | undefined
  for (let i = from; i < to; i++) {
    const current = messages[i]
    if (current.role === 'tool') {
      if (!open?.delete(current.toolCallId)) fail(`options.restore.messages[${i}]`, `answers no open tool call (${current.toolCallId})`)
      continue
    }
    if (open?.size) fail(`options.restore.messages[${i}]`, 'comes before every tool call of the assistant message before it was answered')
    open = undefined
    if (current.role === 'assistant' && current.toolCalls?.length) {
      open = new Map()
      for (const call of current.toolCalls) {
        if (open.has(call.id)) fail(`options.restore.messages[${i}]`, `has two tool calls with the id ${call.id}`)
        open.set(call.id, call)
      }
    }
  }
  return open ? [...open.values()] : []
}

function parkedTurn(value: unknown, messages: readonly Message[]): ParkedTurnCheckpoint {
  const where = 'options.restore.parked'
  const given = object(value, where)
  const turnStart = count(given.turnStart, `${where}.turnStart`)
  if (turnStart > messages.length) fail(`${where}.turnStart`, `is past the last message (${messages.length})`)
  const question = checkedQuestion(given.question, { cut: false })
  if (typeof question === 'string') fail(where, `has a bad question: ${question}`)
  if (!Array.isArray(given.suspended)) fail(`${where}.suspended`, 'must be an array')
  const suspended = given.suspended.map((entry, i) => {
    const item = object(entry, `${where}.suspended[${i}]`)
    const suspension = acceptSuspension(item.suspension)
    if ('problem' in suspension) fail(`${where}.suspended[${i}]`, `has a bad suspension: ${suspension.problem}`)
    return { call: toolCall(item.call, `${where}.suspended[${i}].call`), suspension }
  })
  const budget = breach(given.budget, `${where}.budget`)
  if (budget ? suspended.length : !suspended.length) fail(where, 'must have suspended calls, or a budget (and no calls) when parked at a budget')
  if (suspended.length && suspended[0].suspension.question.id !== question.id) fail(`${where}.question`, 'is not the first suspended call\'s question')
  if (openCalls(messages, 0, turnStart).length) fail('options.restore.messages', 'leave tool calls unanswered before the parked turn')
  const open = openCalls(messages, turnStart, messages.length).map((call) => call.id)
  if (open.join('\n') !== suspended.map((entry) => entry.call.id).join('\n')) {
    fail(`${where}.suspended`, `must be exactly the unanswered calls of the last assistant message, in order (${open.join(', ') || 'none'})`)
  }
  const steps = count(given.steps, `${where}.steps`)
  const saved: ParkedTurnCheckpoint = {
    turnStart,
    step: count(given.step, `${where}.step`),
    question,
    suspended,
    text: text(given.text, `${where}.text`),
    steps,
    toolCalls: count(given.toolCalls, `${where}.toolCalls`),
    usage: tallies(given.usage, `${where}.usage`, usage),
    work: tallies(given.work, `${where}.work`, work),
  }
  if (saved.step > steps) fail(`${where}.step`, `is past the turn's steps (${steps})`)
  if (given.note !== undefined && given.note !== null) saved.note = text(given.note, `${where}.note`)
  if (budget) saved.budget = budget
  const refusedFor = breach(given.refusedFor, `${where}.refusedFor`)
  if (refusedFor) saved.refusedFor = refusedFor
  return saved
}

/**
 * A checkpoint given to `ctx.agents.create({ restore })`, checked field by field (it comes from a
 * database): a clean copy, or `INVALID_OPTIONS` naming the first field that is wrong.
 */
export function checkCheckpoint(value: unknown): AgentCheckpoint {
  try {
    const given = object(value, 'options.restore')
    if (given.v !== 1) fail('options.restore.v', `must be 1 (this runtime reads version 1 checkpoints), got ${JSON.stringify(given.v)}`)
    if (!Array.isArray(given.messages)) fail('options.restore.messages', 'must be an array of transcript messages')
    const messages = given.messages.map((entry, i) => message(entry, `options.restore.messages[${i}]`))
    const checkpoint: AgentCheckpoint = {
      v: 1,
      id: text(given.id, 'options.restore.id', MAX_NAME),
      depth: count(given.depth, 'options.restore.depth'),
      cwd: text(given.cwd, 'options.restore.cwd'),
      maxSteps: count(given.maxSteps, 'options.restore.maxSteps', 1),
      maxToolCallsPerStep: count(given.maxToolCallsPerStep, 'options.restore.maxToolCallsPerStep', 1),
      messages,
      usage: tallies(given.usage, 'options.restore.usage', usage),
      work: tallies(given.work, 'options.restore.work', work),
    }
    if (!checkpoint.id) fail('options.restore.id', 'must not be empty')
    if (!isAbsolute(checkpoint.cwd)) fail('options.restore.cwd', 'must be an absolute path')
    const label = optionalText(given.label, 'options.restore.label')
    if (label !== undefined) checkpoint.label = label
    if (given.persona !== undefined && given.persona !== null) checkpoint.persona = text(given.persona, 'options.restore.persona')
    const model = optionalText(given.model, 'options.restore.model')
    if (model !== undefined) checkpoint.model = model
    if (given.maxTokens !== undefined && given.maxTokens !== null) checkpoint.maxTokens = count(given.maxTokens, 'options.restore.maxTokens', 1)
    // Only its shape here: `create` checks and compiles it as a new output schema (INVALID_OUTPUT_SCHEMA).
    if (given.output !== undefined && given.output !== null) checkpoint.output = object(given.output, 'options.restore.output') as unknown as AgentCheckpoint['output']
    if (given.parked !== undefined && given.parked !== null) checkpoint.parked = parkedTurn(given.parked, messages)
    else if (openCalls(messages, 0, messages.length).length) fail('options.restore.messages', 'end with unanswered tool calls but the checkpoint has no parked turn')
    return checkpoint
  } catch (error) {
    if (error instanceof Problem) throw new AgentError('INVALID_OPTIONS', `${error.message}; pass what agent.checkpoint() returned (as JSON).`)
    throw error
  }
}
