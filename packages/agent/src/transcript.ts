import { setMaxListeners } from 'node:events'
import {
  type AbortScope, AbortWaiters, addUsage, addWork, checkedUsage, countOf, emptyUsage, emptyWork, listenForAbort, type Usage,
  type WorkCounts,
} from '@cordis-subagents/shared'
import { InFlight, runFlat } from './abort.js'
import { finishDiagnostic } from './stops.js'
import { cloneMessage, freezeHistory, plainOf } from './history.js'
import type { InboxDelegation } from './inbox.js'
import type { AgentUsage, AgentWork, GenerateResponse, Message, ModelToolCall, ToolMessage } from './types.js'

const NO_MESSAGES: readonly Message[] = Object.freeze([])

/** The first `prefixLength` messages of `prefix` (a plain array, perhaps longer) and then `own`, cut at `length`, as one new array. */
function joined(prefix: readonly Message[], prefixLength: number, own: readonly Message[], length: number): Message[] {
  if (length <= prefixLength) return prefix.slice(0, length)
  if (!prefixLength) return own.slice(0, length)
  const ownLength = length - prefixLength
  // concat of two packed arrays is a block copy. A longer prefix (a parent's storage) is copied as long as the whole and its
  // end overwritten with the own messages (a push past a slice's length would copy it all again to grow it).
  if (prefix.length === prefixLength) return prefix.concat(ownLength === own.length ? own : own.slice(0, ownLength))
  const out = prefix.slice(0, Math.min(length, prefix.length))
  for (let i = 0; i < ownLength; i++) out[prefixLength + i] = own[i]
  return out
}

/**
 * An agent's conversation. Messages before the in-flight turn are "completed"; a turn is closed only when the transcript
 * is balanced, so completed messages are always a valid seed. Storage is append-only below the turn in flight, messages
 * frozen when appended. A transcript seeded with another (`create({ seed: parent.transcript })`, a fork child) reads the
 * other's completed turns from the other's storage, up to their length then: seeding copies nothing, however long the
 * history. `completed()` hands out a frozen array (once per length); `snapshot()` each model request a plain copy.
 */
export class Transcript {
  /** Inherited messages (a fork's parent's completed turns): the first `prefixLength` of this plain array (maybe the parent's storage). */
  private readonly prefix: readonly Message[] = NO_MESSAGES
  private readonly prefixLength: number = 0
  /** The frozen history (a `completed()`) this transcript was seeded with, if it was: its `completed()` until a turn ends. */
  private readonly frozenSeed?: readonly Message[]
  /** Its own messages, append-only. `Array.of()`, not `[]`: V8 made that literal's arrays old from birth (see `Entry`); packed, as `[]`. */
  private readonly own: Message[] = Array.of<Message>()
  private turnStart: number | undefined
  /** The last `completed()` handed out, reused while the length it covers is unchanged. */
  private latestCompleted?: readonly Message[]
  /** A seed of both parts (a fork of a fork): one plain copy, reused while the length it covers is unchanged. */
  private latestJoined?: readonly Message[]
  /** How many of `own`'s first messages another transcript reads in place (`reopenTurn` never reopens below it). */
  private sharedOwn = 0

  /** `seed`: another transcript (its completed turns now, not copied), a `completed()` (kept as is), or messages (copied, frozen). */
  constructor(seed: readonly Message[] | Transcript = NO_MESSAGES) {
    if (seed instanceof Transcript) {
      const length = seed.turnStart ?? seed.length
      this.prefix = seed.storageUpTo(length)
      this.prefixLength = length
      return
    }
    if (seed.length === 0) return
    const plain = plainOf(seed)
    if (!plain) for (const message of seed) this.own.push(freezeMessage(cloneMessage(message)))
    else [this.frozenSeed, this.prefix, this.prefixLength] = [seed, plain, seed.length]
  }

  /** A plain array whose first `length` messages (completed ones) are this transcript's and stay so: no copy unless it has both parts. */
  private storageUpTo(length: number): readonly Message[] {
    if (length <= this.prefixLength) return this.prefix
    if (this.prefixLength) {
      if (this.latestJoined?.length !== length) this.latestJoined = joined(this.prefix, this.prefixLength, this.own, length)
      return this.latestJoined
    }
    this.sharedOwn = length
    return this.own
  }

  /** Every message so far, as a copy the caller may edit (the messages themselves are frozen and shared). */
  get messages(): readonly Message[] { return joined(this.prefix, this.prefixLength, this.own, this.length) }
  get length(): number { return this.prefixLength + this.own.length }

  /** Every message of every ended turn; never any of the turn in flight. Copies, free to edit. */
  completedMessages(): Message[] { return this.completed().map(cloneMessage) }

  /** Every message of every ended turn, as a frozen array sharing the messages (later turns never appear in it); once per length. */
  completed(): readonly Message[] {
    const length = this.turnStart ?? this.length
    if (this.latestCompleted?.length === length) return this.latestCompleted
    if (length === this.prefixLength && this.frozenSeed) return this.frozenSeed
    this.latestCompleted = freezeHistory(joined(this.prefix, this.prefixLength, this.own, length))
    return this.latestCompleted
  }

  /**
   * Every message so far, for a model request: a plain array of its own (a block copy of pointers), which later appends
   * never reach. Not frozen on purpose: V8 (Node 20) reads a frozen array by index 2–3× slower, and a model reads every
   * message; one that writes to it changes only its own copy (the messages themselves are frozen).
   */
  snapshot(): readonly Message[] { return joined(this.prefix, this.prefixLength, this.own, this.length) }

  beginTurn(): void { this.turnStart = this.length }

  endTurn(): void {
    this.balance('The tool call was not answered because the turn ended.')
    this.turnStart = undefined
  }

  /** Reopens the last turn at `start` (a restored parked turn: its messages are in flight again); never below what a seed reads. */
  reopenTurn(start: number): void {
    if (!Number.isSafeInteger(start) || start < this.prefixLength || start > this.length) throw new RangeError(`turn start ${start} is outside the transcript`)
    if (start < this.sharedOwn) throw new RangeError(`turn start ${start} is below the ${this.sharedOwn} messages another transcript was seeded with`)
    this.turnStart = start
  }

  /** Removes `count` messages at `at` of the turn in flight (read inbox messages an interrupt puts back). */
  removeInFlight(at: number, count: number): void {
    if (this.turnStart === undefined || at < this.turnStart || at + count > this.length) {
      throw new RangeError('only messages of the turn in flight can be removed')
    }
    this.own.splice(at - this.prefixLength, count)
  }

  push(message: Message): void { this.own.push(freezeMessage(message)) }

  /**
   * Answers every call of the last assistant message that has no result yet with a synthetic error result. Only the
   * results after that message count (a model may reuse call ids across steps): the work is that message's, not the history's.
   */
  balance(reason: string): void {
    let index = this.length - 1
    while (index >= 0 && this.at(index).role === 'tool') index--
    const last = index >= 0 ? this.at(index) : undefined
    if (!last || last.role !== 'assistant' || !last.toolCalls?.length) return
    const answered = new Set<string>()
    for (let i = index + 1; i < this.length; i++) answered.add((this.at(i) as ToolMessage).toolCallId)
    for (const call of last.toolCalls) {
      if (answered.has(call.id)) continue
      this.push({ role: 'tool', toolCallId: call.id, name: call.name, content: reason, isError: true })
      answered.add(call.id)
    }
  }

  private at(index: number): Message { return index >= this.prefixLength ? this.own[index - this.prefixLength] : this.prefix[index] }
}

/** Appended messages are shared by every view and fork child: a frozen copy is kept, its `toolCalls` frozen (not their `input`). */
function freezeMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls) {
    for (const call of message.toolCalls) Object.freeze(call)
    Object.freeze(message.toolCalls)
  }
  return Object.freeze(new Entry(message) as Message)
}

/** A kept message, not the caller's literal: V8 made those old from birth (kept runs keep transcripts), and their texts with them. */
class Entry { constructor(message: Message) { Object.assign(this, message) } }

// An agent's own tallies of what it spent (the budget above is the tree's limit on it).
/** `own` and `delegated` of one kind, and their `total` computed when read (`AgentUsage`, `AgentWork`). */
interface Tally<T> { own: T; delegated: T; readonly total: T }

// `total` is an own enumerable accessor (in JSON and `Object.keys`), one getter per kind reading `this`, one class per kind:
// each kind keeps one hidden class. A closure per object, or two kinds sharing a shape with different getters, puts a tally
// in dictionary mode (≈ 350 bytes more per agent and tally).

function usageTotal(this: Tally<Usage>): Usage { return addUsage(this.own, this.delegated) }
function workTotal(this: Tally<WorkCounts>): WorkCounts { return addWork(this.own, this.delegated) }

/** Zero tallies, shared until the first charge replaces them (a tally is replaced, never changed in place). */
export const NO_USAGE: Usage = Object.freeze(emptyUsage())
export const NO_WORK: WorkCounts = Object.freeze(emptyWork())

class UsageTally {
  own = NO_USAGE
  delegated = NO_USAGE
  constructor() {
    Object.defineProperty(this, 'total', { enumerable: true, get: usageTotal })
  }
}

class WorkTally {
  own = NO_WORK
  delegated = NO_WORK
  constructor() {
    Object.defineProperty(this, 'total', { enumerable: true, get: workTotal })
  }
}

/** A delegation's usage and work (a tool result, or a background child's result from the inbox) into the turn's and agent's tallies. */
export function rollUp(turn: TurnTallies, agent: { usage: AgentUsage; work: AgentWork }, result: InboxDelegation): void {
  turn.delegated = addUsage(turn.delegated, result.usage)
  agent.usage.delegated = addUsage(agent.usage.delegated, result.usage)
  if (!result.work) return
  turn.ownWork = oneMoreDelegation(turn.ownWork)
  agent.work.own = oneMoreDelegation(agent.work.own)
  turn.delegatedWork = addWork(turn.delegatedWork, result.work)
  agent.work.delegated = addWork(agent.work.delegated, result.work)
}

const oneMoreDelegation = (w: WorkCounts): WorkCounts => ({ steps: w.steps, toolCalls: w.toolCalls, delegations: w.delegations + 1 })

interface TurnTallies { delegated: Usage; ownWork: WorkCounts; delegatedWork: WorkCounts }

/** An agent's token tally: `own` and `delegated`, and `total` computed from them when read. */
export function usageTally(): Tally<Usage> { return new UsageTally() as unknown as Tally<Usage> }

/** An agent's work tally (steps, tool calls, delegations): `own`, `delegated` and a computed `total`. */
export function workTally(): Tally<WorkCounts> { return new WorkTally() as unknown as Tally<WorkCounts> }

// What a model returned, made well-formed before it enters the transcript.
const FINISH_REASONS = new Set<string>(['stop', 'tool-calls', 'length', 'refusal', 'error', 'other'])

/**
 * The model's response made well-formed. `maxCalls`: the most tool calls kept; the others (and those
 * the adapter already dropped) are only counted in `droppedToolCalls`, so a response with 200,000
 * calls costs what one with `maxCalls` costs.
 */
export function normalizeResponse(response: GenerateResponse, idPrefix: string, maxCalls: number): GenerateResponse {
  if (!response || typeof response !== 'object') throw new Error('the model returned no response')
  const calls: unknown[] = Array.isArray(response.toolCalls) ? response.toolCalls : []
  const toolCalls = normalizeCalls(calls, idPrefix, maxCalls)
  const dropped = calls.length - toolCalls.length + countOf(response.droppedToolCalls)
  const raw: unknown = response.finishReason
  // A plain copy, then assignment: V8 builds `{ ...response, text, toolCalls }` on a slow path (bench/README.md).
  const normalized = { ...response }
  normalized.text = typeof response.text === 'string' ? response.text : ''
  normalized.toolCalls = toolCalls
  // Usage from outside counts only as whole non-negative numbers (a negative one would give a tree its budget back).
  if (response.usage !== undefined) normalized.usage = checkedUsage(response.usage)
  if (dropped) normalized.droppedToolCalls = dropped
  else if (normalized.droppedToolCalls !== undefined) delete normalized.droppedToolCalls
  if (raw === undefined || raw === null) normalized.finishReason = toolCalls.length ? 'tool-calls' : 'stop'
  else if (!FINISH_REASONS.has(raw as string)) {
    // An adapter bug must not pass for success: an unknown reason is an `error` stop.
    normalized.finishReason = 'other'
    normalized.diagnostic ??= finishDiagnostic(String(raw) as GenerateResponse['finishReason'])
  }
  return normalized
}

/** Every call gets a unique string id and a name (the transcript stays balanced); a malformed one gets an error, not a crash. */
function normalizeCalls(calls: unknown[], idPrefix: string, maxCalls: number): ModelToolCall[] {
  const ids = new Set<string>()
  const kept = calls.length > maxCalls ? calls.slice(0, maxCalls) : calls
  return kept.map((raw, index) => {
    const call = (raw && typeof raw === 'object' ? raw : {}) as Partial<ModelToolCall>
    const base = typeof call.id === 'string' && call.id ? call.id : `${idPrefix}-${index}`
    let id = base
    for (let n = index; ids.has(id); n++) id = `${base}-${n}`
    ids.add(id)
    if (typeof call.name === 'string' && call.name && raw === call) return id === call.id ? call as ModelToolCall : { ...call as ModelToolCall, id }
    const name = typeof call.name === 'string' && call.name ? call.name : '(unnamed)'
    return { id, name, input: call.input, invalidInput: 'the model sent a malformed tool call (it needs a tool name).' }
  })
}

// A turn's abort lives with its records: a delegation's road enters this file already (abort.ts only on an abort).
const settledLeg = Promise.resolve()
const noop = () => {}

/**
 * A turn's abort: the signal its model and tool calls get, and the races of a step against it (`race`). Only the agent
 * aborts a turn (its caller's signal, `abort()`, `dispose()`, the wall-clock limit), always through `abort`, so each race
 * is rejected there: no listener on the turn's own signal, no promise of its own unless someone asks for `rejection`.
 * It is an `AbortScope` too: a tool call waits on it (`exec.abortScope`, `onAbort`) without making the signal.
 * The signal itself is made when first read (a model or tool that takes it): on Node 20 an `AbortSignal` costs about
 * 3 µs to make and outlives the next young-generation collection, and most turns never read theirs (bench/README).
 * Work a race stops waiting for goes to the owner's `InFlight` (abort.ts), which `dispose` waits for.
 */
export class TurnAbort extends AbortWaiters implements AbortScope {
  private controller?: AbortController
  /** Whether `abort` ran, and with what (an `AbortError` if none was given); fields: an `AbortScope` check calls nothing. */
  aborted = false
  reason: unknown
  private promise?: Promise<never>
  private reject?: (reason: unknown) => void
  /** The races of the current step: rejecter, work, rejecter, work … (flat: no object per race). */
  private races?: unknown[]
  private listenersRaised = false
  /** The leg's outcome (the agent's `dispose` waits for it). */ done: Promise<unknown> = settledLeg

  /** Stops waiting on the caller's abort (the agent calls it at the leg's end). */ readonly detach: () => void

  /** `caller`: the run's signal or abort scope, if any. */
  constructor(private readonly owner: { inFlight?: InFlight }, caller?: AbortSignal | AbortScope) {
    super()
    this.detach = caller ? listenForAbort(caller, () => this.abort(caller.reason)) : noop
  }

  /** The turn's signal, made on first read (aborted already when the turn is). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.aborted) this.controller.abort(this.reason)
      if (this.listenersRaised) setMaxListeners(0, this.controller.signal)
    }
    return this.controller.signal
  }

  /** A promise rejected when the turn is aborted (for waits that are not a step's work: hooks, the inbox). */
  get rejection(): Promise<never> {
    if (!this.promise) {
      this.promise = new Promise<never>((_, reject) => {
        if (this.aborted) reject(this.reason)
        else this.reject = reject
      })
      this.promise.catch(() => {})
    }
    return this.promise
  }

  /** `work`, or a rejection as soon as the turn is aborted: one promise per race, none for the abort. */
  race<T>(work: T | PromiseLike<T>): Promise<T> {
    const pending = Promise.resolve(work)
    if (this.aborted) {
      (this.owner.inFlight ??= new InFlight()).add(pending)
      return Promise.reject(this.reason)
    }
    return new Promise<T>((resolve, reject) => {
      // A literal of two for the first: `push` onto an empty array reserves room for 17.
      if (this.races) this.races.push(reject, pending)
      else this.races = [reject, pending]
      pending.then(resolve, reject)
    })
  }

  /** The step's races have all settled (the turn awaited each): their entries go. */
  stepDone(): void { this.races = undefined }

  abort(reason?: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason
    // The signal's listeners and the scope's waiters (a tool call cancelling its child …) may queue behind an abort in
    // progress (abort.ts); done before the outermost call returns, so before a rejection is observed (a microtask later).
    runFlat(() => { if (this.controller && !this.controller.signal.aborted) this.controller.abort(reason); this.callWaiters() })
    this.reject?.(reason)
    this.reject = undefined
    const races = this.races
    this.races = undefined
    for (let i = 0; races && i < races.length; i += 2) {
      (races[i] as (reason: unknown) => void)(reason);
      (this.owner.inFlight ??= new InFlight()).add(races[i + 1] as Promise<unknown>)
    }
  }

  /** Tools listen on the turn's signal (a delegating tool may start many children on it): the limit goes before the first tool step. */
  raiseListenerLimit(): void {
    if (this.listenersRaised) return
    this.listenersRaised = true
    if (this.controller) setMaxListeners(0, this.controller.signal)
  }
}
