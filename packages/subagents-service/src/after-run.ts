import type { Context, Logger } from 'cordis'
import { LRUCache } from 'lru-cache'
import type { Agent, AgentObserver, DelegationAccount, DelegationEntry, DelegationState } from '@cordis-subagents/agent'
import { callsSize, imagesSize } from './verbs/transcript-parts.js'
import type { BackgroundRegistry } from './background/book.js'
import {
  type AbortScope, describeError, emitIsolatedOn, handleRejection, hasListenersOn, headBytes, KeptWith,
} from '@cordis-subagents/shared'
import { EventListeners, type EventSink, type SubagentEventHandlers, type SubagentEventMap } from './events.js'
import type { LiveRun } from './run/delegation.js'
import type { SubagentOutcome, SubagentRun, SubagentRunInfo, SubagentStopReason } from './types.js'
import type { ChildSizes } from './verbs/child-sizes.js'
import {
  type ContinuableEntry, CONTINUE_WINDOW_MS, type DroppedRun, MAX_ACCOUNT_LISTED, MAX_KEPT_RESULT_BYTES, MAX_KEPT_RESULTS,
  type KeptResult, type ResultLimits,
} from './verbs/results.js'

// After the run: the service's events (emitted by the run, isolated from their listeners) and the listeners that keep what a run
// leaves: its outcome by run id (`ResultBook`), the run while it can be continued, and the account of a root's tree (issue 44 item 4).

/** Emits the service's events, every listener isolated: one that throws or rejects is logged (it must not veto a run's end). */
export class SubagentEvents extends EventListeners implements EventSink {
  constructor(ctx: Context, private readonly log: Logger) { super(ctx) }

  /** Whether event `name` has a listener now (so an emitter can skip building what nobody reads). */
  has(name: keyof SubagentEventMap): boolean { return this.direct.has(name) || hasListenersOn(this.lifecycle, name) }

  emit<K extends keyof SubagentEventMap>(name: K, ...args: SubagentEventMap[K]): void {
    const failed = (error: unknown) => this.log.warn('a listener of %s failed (ignored): %s', name, describeError(error))
    emitIsolatedOn(this.lifecycle, name, args, failed)
    const direct = this.direct.get(name)
    if (!direct) return
    // A live Set: a handler that unsubscribes (itself or another) while this runs is fine.
    for (const handler of direct) try { handleRejection(handler(...args), failed) } catch (error) { failed(error) }
  }
}

/** The outcomes of ended runs by run id, most recent last, bounded by count and bytes: copies, so reading one never touches the
 * run or its provider. It remembers (ids only, bounded) which runs it forgot, so a read of one says so. */
export class ResultBook {
  /** Oldest first: an LRU cache only `peek`ed, so in recording order; forgetting the oldest is O(1) (with a `Map`, O(size)). */
  private readonly entries: LRUCache<string, { result: KeptResult; bytes: number }>
  /** Ids of results forgotten for room (at most 4 × `maxResults`, the oldest dropped first). */
  private readonly forgotten: LRUCache<string, true>
  private bytes = 0

  constructor(readonly limits: ResultLimits = { maxResults: MAX_KEPT_RESULTS, maxBytes: MAX_KEPT_RESULT_BYTES }) {
    const max = Math.max(1, limits.maxResults)
    this.forgotten = new LRUCache({ max: 4 * max })
    this.entries = new LRUCache({
      max,
      dispose: (entry, runId, reason) => { this.bytes -= entry.bytes; if (reason === 'evict') this.forgotten.set(runId, true) },
    })
  }

  /** @internal Keeps the outcome of every run `events` ends (a `subagent/end` listener of its own); returns the unsubscribe. */
  keepFrom(events: SubagentEvents): () => void { return events.observe({ 'subagent/end': (info, outcome) => this.record(info, outcome) }) }

  /** Keeps the final outcome of run `info.runId` (a later one for the same run replaces it). */
  record(info: SubagentRunInfo, outcome: SubagentOutcome): void {
    const { maxResults, maxBytes } = this.limits
    if (maxResults < 1) return
    let output = outcome.output
    // The diagnostic counts too: the output is cut to what it leaves, so the new entry alone fits the bound.
    const diagnosticBytes = outcome.diagnostic === undefined ? 0 : Buffer.byteLength(outcome.diagnostic, 'utf8')
    const room = Math.max(0, maxBytes - diagnosticBytes)
    let bytes = Buffer.byteLength(output, 'utf8')
    const truncated = bytes > room
    if (truncated) {
      // A fresh copy of the head: a slice would keep the whole output alive behind it.
      output = Buffer.from(headBytes(output, room), 'utf8').toString('utf8')
      bytes = Buffer.byteLength(output, 'utf8')
    }
    const result: KeptResult = {
      runId: info.runId, provider: info.provider, parentId: info.parentId, stopReason: outcome.stopReason, status: outcome.status, output,
      work: { ...outcome.work }, endedAt: Date.now(), source: 'memory', truncated,
    }
    if (outcome.limit !== undefined) result.limit = outcome.limit
    if (info.label !== undefined) result.label = info.label
    if (outcome.value !== undefined && !truncated) {
      result.value = outcome.value
      // Counted like the output (its JSON), so the byte bound holds for values too.
      bytes *= 2
    }
    if (outcome.diagnostic !== undefined) {
      result.diagnostic = outcome.diagnostic
      bytes += diagnosticBytes
    }
    if (outcome.usage) result.usage = { ...outcome.usage }
    this.forgotten.delete(info.runId)
    // Replacing an entry, or forgetting the oldest past `maxResults`, takes its bytes off (`dispose`).
    this.bytes += bytes
    this.entries.set(info.runId, { result: Object.freeze(result), bytes })
    // The oldest go first; the entry just kept is never the one forgotten.
    while (this.bytes > maxBytes && this.entries.size > 1) this.entries.pop()
  }

  /** The kept outcome of run `runId`, or undefined. */
  get(runId: string): KeptResult | undefined { return this.entries.peek(runId)?.result }
  /** Whether this book kept run `runId`'s outcome once and has forgotten it for room. */
  wasForgotten(runId: string): boolean { return this.forgotten.has(runId) }
  /** How many outcomes, and bytes of output and diagnostics, are kept now. */
  get size(): { results: number; bytes: number } { return { results: this.entries.size, bytes: this.bytes } }
}

/** What the continuable runs' `subagent/end` listener keeps (`ContinuableRuns`, verbs/continuation.ts: not imported, it imports this). */
type ContinuableBook = { readonly book: LRUCache<string, ContinuableEntry>; readonly inFlight: Map<string, number>
  readonly live: Map<string, LiveRun>; readonly sizes: ChildSizes; readonly dropped: LRUCache<string, DroppedRun> }

export function keepContinuable(runs: ContinuableBook) {
  return (info: SubagentRunInfo, outcome: SubagentOutcome) => continuableEnded(runs, runs.live.get(info.runId), outcome)
}

/** A run ended (at `endedAt`, epoch ms, now unless given): kept continuable if it can be, sized as its child's transcript (`ChildSizes`:
 * one not on ctx.agents, 4 KiB and its output; one lost, past any bound); past the count or byte bound the oldest go (`dropped`). */
export function continuableEnded(runs: ContinuableBook, run: LiveRun | undefined, outcome: SubagentOutcome, endedAt?: number): void {
  if (!run) return
  const continues = runs.inFlight.get(run.id) ?? 0
  runs.inFlight.delete(run.id)
  const now = performance.now()
  const mono = endedAt === undefined ? now : now - (Date.now() - endedAt)
  const { sizes } = runs, id = run.childId!
  const since = Math.min(mono - (outcome.durationMs ?? mono) - 1, sizes.continued.get(id) ?? Infinity)
  const measured = sizes.lost.delete(id) || sizes.forgotAt >= since ? Infinity : sizes.get(id)
  sizes.delete(id)
  sizes.continued.delete(id)
  const providerRun = run.providerRun
  if (typeof providerRun?.continueWith !== 'function') return
  const { info } = run
  const entry = new Continuable(run.id, info.provider, info.parentId, endedAt ?? Date.now(), mono, outcome.stopReason, continues,
    providerRun, measured ?? 4096 + outcome.output.length, run.parent)
  if (info.label) entry.label = info.label
  if (entry.size > runs.book.maxSize) return void runs.dropped.set(run.id, { parentId: info.parentId, unsized: measured === Infinity })
  holdParent(entry)
  runs.book.set(run.id, entry, { size: entry.size })
  trimContinuable(runs.book, now)
}

// A class, not a literal: an entry made old from birth would keep what it names alive past its own end (bench/README).
class Continuable implements ContinuableEntry {
  declare label?: string; declare letGo?: () => void
  constructor(readonly runId: string, readonly provider: string, readonly parentId: string, readonly endedAt: number,
    readonly endedMono: number, readonly stopReason: SubagentStopReason, readonly continues: number, readonly run: SubagentRun,
    readonly size: number, public parent?: Agent) {}
}

/** The entry keeps its parent until the parent is disposed (an agent of `ctx.agents` says when; another is kept as it is). */
export function holdParent(entry: ContinuableEntry): void {
  const lifetime = (entry.parent as { lifetime?: AbortScope } | undefined)?.lifetime
  if (lifetime?.aborted) entry.parent = undefined
  else if (lifetime) entry.letGo = lifetime.onAbort(() => { entry.parent = entry.letGo = undefined })
}

/** Drops what ended longer than `CONTINUE_WINDOW_MS` ago (`now`: `performance.now()`), oldest first (the count bound is the book's own). */
export function trimContinuable(book: LRUCache<string, ContinuableEntry>, now: number): void {
  for (let oldest = book.rkeys().next(); !oldest.done && expired(book.peek(oldest.value)!, now); oldest = book.rkeys().next()) {
    book.delete(oldest.value)
  }
}

/** Ended longer than `CONTINUE_WINDOW_MS` ago (an entry put back after a failed continue may sit behind newer ones). */
export function expired(entry: ContinuableEntry, now: number): boolean { return now - entry.endedMono >= CONTINUE_WINDOW_MS }

const UNFINISHED = new Set<DelegationState>(['running', 'pending'])
const NO_UNREAD = new Set<string>() // every tree's with no background parent: never added to (only a non-empty set is deleted from)
/** One root's tree: every delegation handed over under it, and the parents (weakly) to read their unread results. */
class TreeBook {
  /** Unfinished entries, and the latest ended ones up to the cap, in the order they started. */
  readonly entries = new Map<string, DelegationEntry>()
  /** Made at its first background parent (a tree of sync delegations only never needs one); the root itself is held as it is. */
  parents?: Map<string, WeakRef<Agent> | Agent>
  /** Ended entries forgotten past the cap: counted by state only. */
  readonly forgotten: DelegationAccount['states'] = {}
  forgottenTotal = 0
  ended = 0
  /** The delegations of the root's current turn (and its resumes), with earlier turns' still unfinished or unread. */
  turn?: DelegationEntry[]
  /** What the last turn leaves to the next: its delegations unfinished or unread at its end. */
  carry?: DelegationEntry[]

  /** Forgets the oldest ended entries while more than `keep` ended ones are kept. */
  trim(keep: number): void {
    if (this.ended <= keep) return
    for (const [runId, entry] of this.entries) {
      if (UNFINISHED.has(entry.state)) continue
      this.entries.delete(runId)
      this.forgotten[entry.state] = (this.forgotten[entry.state] ?? 0) + 1
      this.forgottenTotal++
      if (--this.ended <= keep) return
    }
  }
}

/** The account of delegations by tree; a run's root is found from its parent, a book lives as long as its root agent (kept with it). */
export class DelegationAccounts {
  private readonly books = new KeptWith<TreeBook>('delegation account')
  /** Books of runs that have not ended, by run id. */
  private readonly open = new Map<string, TreeBook>()
  private readonly inTurn = new Set<Agent>()
  /** `live`: the service's runs by id (a run's parent is a field: reading it calls nothing). */
  constructor(private readonly live: ReadonlyMap<string, { readonly parent: Agent }>, private readonly background: BackgroundRegistry) {}

  /** The handlers that keep the books (`SubagentEvents.observe`). */
  handlers(): SubagentEventHandlers {
    return {
      'subagent/start': (info) => this.started(info),
      'subagent/pending': (info) => this.move(info.runId, 'pending'),
      'subagent/resume': (info) => this.move(info.runId, 'running'),
      'subagent/end': (info, outcome) => {
        const book = this.open.get(info.runId)
        this.move(info.runId, outcome.stopReason as DelegationState)
        this.open.delete(info.runId)
        if (book && ++book.ended) book.trim(MAX_ACCOUNT_LISTED)
      },
    }
  }

  /** The account of `root`'s tree, or undefined when nothing was delegated under it. `max`: most entries listed. */
  account(root: Agent, max = MAX_ACCOUNT_LISTED): DelegationAccount | undefined {
    const book = this.books.get(root)
    return book && summary(book.entries.values(), this.unreadRuns(book), max, book.forgotten, book.forgottenTotal)
  }

  /** A root's turn begins (`resumed`: a resume after a question, whose turn goes on counting); held until its end. */
  turnStarted(root: Agent, resumed: boolean): void {
    this.inTurn.add(root)
    const book = resumed ? undefined : this.books.get(root)
    if (!book) return
    book.turn = book.carry
    book.carry = undefined
  }

  /**
   * A root's run ended: the account of its turn's delegations and of those earlier turns left unfinished or unread,
   * or undefined. Costs what the turn saw, never the whole history of a root that delegated in every turn.
   */
  turnEnded(root: Agent, parked: boolean): DelegationAccount | undefined {
    this.inTurn.delete(root)
    const book = this.books.get(root)
    const turn = book?.turn
    if (!turn) return undefined
    const unread = this.unreadRuns(book)
    if (unread.size) for (const runId of unread) if (!turn.some((entry) => entry.runId === runId)) unread.delete(runId)
    if (!parked) {
      const carry = turn.filter((entry) => UNFINISHED.has(entry.state) || unread.has(entry.runId))
      book.turn = undefined
      book.carry = carry.length ? carry : undefined
    }
    return summary(turn, unread, MAX_ACCOUNT_LISTED)
  }

  private started(info: SubagentRunInfo): void {
    const parent = this.live.get(info.runId)?.parent
    if (!parent) return
    const root = this.root(parent)
    const book = this.books.get(root) ?? this.books.set(root, new TreeBook())
    const entry: DelegationEntry = { runId: info.runId, provider: info.provider, parentId: info.parentId, depth: info.depth, state: 'running' }
    if (info.label !== undefined) entry.label = info.label
    if (info.childId !== undefined) entry.childId = info.childId
    book.entries.set(info.runId, entry)
    if (this.inTurn.has(root)) (book.turn ??= []).push(entry)
    // Only a parent with background delegations can leave a result unread (a sync result is its tool result); its book and
    // inbox exist before the start is handed over (`usedInbox` makes none). A WeakRef per parent costs a delegation a good part of its GC
    // (its target outlives young collections, and the rest of the job), so the root, whose book this is, is held as it is.
    if (!book.parents?.has(parent.id) && (parent as { usedInbox?: object }).usedInbox && this.background.peek(parent)) {
      (book.parents ??= new Map()).set(parent.id, parent === root ? parent : new WeakRef(parent))
    }
    this.open.set(info.runId, book)
  }

  private move(runId: string, state: DelegationState): void {
    const entry = this.open.get(runId)?.entries.get(runId)
    if (entry) entry.state = state
  }

  /** The root agent above `agent` (itself at the top): a walk of at most the tree's depth, no cache to outlive it. */
  private root(agent: Agent): Agent {
    let at = agent
    while (at.parent) at = at.parent
    return at
  }

  /** Runs whose result went to their parent as a background message its model has not read (in its inbox, or lost). */
  private unreadRuns(book: TreeBook): Set<string> {
    if (!book.parents) return NO_UNREAD
    const unread = new Set<string>()
    for (const ref of book.parents.values()) {
      const parent = ref instanceof WeakRef ? ref.deref() : ref
      // Only a parent with messages waiting, or disposed (a result lost unread), can have an unread result: a parent of
      // sync delegations only never enters the background book. `usedInbox` is the agent's own (internal) view of its inbox.
      if (!parent || !(parent.disposed || (parent as { usedInbox?: { size: number } }).usedInbox?.size)) continue
      const background = this.background.peek(parent)
      for (const task of background?.list() ?? []) {
        const runId = task.run?.id
        // Every delegation of these parents is this tree's, a forgotten entry's too: counted even when not listed.
        if (runId !== undefined && background!.unread(task)) unread.add(runId)
      }
    }
    return unread
  }
}

/** Puts a root run's account on its result (`result.children`), and sizes each child's transcript as its turns add to it (`ChildSizes`;
 * a response's tool calls and a result's images by `verbs/transcript-parts.ts`, entered only for those). */
export function runObserver(accounts: DelegationAccounts, sizes: ChildSizes): AgentObserver {
  const grow = (agent: Agent, by: number, size = sizes.get(agent.id)) => {
    if (size === undefined && sizes.lost.has(agent.id)) return // lost stays lost: the rest of a transcript is not all of it
    // In the order first sized (oldest lost first): a delete-and-set per growth makes a one-child map a new table (bench/README).
    if (sizes.set(agent.id, (size ?? 0) + by).size > sizes.max) sizes.lose()
  }
  return {
    runStart: (agent, prompt, resumed) => {
      if (!agent.parent) return accounts.turnStarted(agent, resumed !== undefined)
      grow(agent, 64 + prompt.length)
    },
    modelCallEnd: (agent, _step, response) => {
      if (agent.parent && response) grow(agent, 64 + response.text.length + (response.toolCalls.length && callsSize(response.toolCalls)))
    },
    toolCallEnd: (agent, _step, _call, { content, images }) => {
      if (agent.parent) grow(agent, 64 + content.length + (images?.length ? imagesSize(images) : 0))
    },
    runEnd: (agent, result) => {
      if (agent.parent) return
      const account = accounts.turnEnded(agent, result.stopReason === 'pending')
      if (account) result.children = account
    },
  }
}

/** Counts every entry, lists the unfinished and unread first, then the rest by start, at most `max`; copies only what it lists. */
function summary(entries: Iterable<DelegationEntry>, unread: Set<string>, max: number,
  forgotten: DelegationAccount['states'] = {}, forgottenTotal = 0): DelegationAccount {
  const states: DelegationAccount['states'] = { ...forgotten }
  const first: DelegationEntry[] = []
  const rest: DelegationEntry[] = []
  let total = forgottenTotal
  for (const entry of entries) {
    total++
    states[entry.state] = (states[entry.state] ?? 0) + 1
    const isUnread = unread.has(entry.runId)
    const ahead = isUnread || UNFINISHED.has(entry.state)
    if (ahead ? first.length >= max : first.length + rest.length >= max) continue
    const copy = { ...entry }
    if (isUnread) copy.unread = true
    else delete copy.unread
    ;(ahead ? first : rest).push(copy)
  }
  const listed = [...first, ...rest].slice(0, max)
  return { total, states, unread: unread.size, listed, omitted: total - listed.length }
}
