import type { Agent, AgentObserver, DelegationAccount, DelegationEntry, DelegationState } from '@cordis-subagents/agent'
import type { SubagentEventHandlers } from '../events.js'
import type { SubagentRunInfo } from '../types.js'
import type { BackgroundRegistry } from '../background/book.js'

// Issue 44 item 4: the account of every delegation of a root's tree, by its root agent, kept from the service's own events.

/**
 * Most entries a `DelegationAccount` lists; the rest are counted (`omitted`), never dropped from the counts.
 * It is also what a tree keeps of its ended delegations: past it the oldest ended entry is forgotten and
 * only counted, so a root that lives for days (a chat's) holds this many entries, not one per delegation ever.
 */
export const MAX_ACCOUNT_LISTED = 1000

const UNFINISHED = new Set<DelegationState>(['running', 'pending'])

/** One root's tree: every delegation handed over under it, and the parents (weakly) to read their unread results. */
class TreeBook {
  /** Unfinished entries, and the latest ended ones up to the cap, in the order they started. */
  readonly entries = new Map<string, DelegationEntry>()
  readonly parents = new Map<string, WeakRef<Agent>>()
  /** Ended entries forgotten past the cap: counted by state only. */
  readonly forgotten: DelegationAccount['states'] = {}
  forgottenTotal = 0
  ended = 0
  /**
   * The delegations of the root's current turn (its run, and the runs resuming it after a question),
   * with those of earlier turns still unfinished or unread when it began.
   */
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

/**
 * The service's account of delegations by tree. A run's root is found from its parent agent (walked up
 * once per agent, then cached); a book lives as long as its root agent (weakly held).
 */
export class DelegationAccounts {
  private readonly books = new WeakMap<Agent, TreeBook>()
  private readonly rootOf = new WeakMap<Agent, Agent>()
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
        if (book) {
          book.ended++
          book.trim(MAX_ACCOUNT_LISTED)
        }
      },
    }
  }

  /** The account of `root`'s tree, or undefined when nothing was delegated under it. `max`: most entries listed. */
  account(root: Agent, max = MAX_ACCOUNT_LISTED): DelegationAccount | undefined {
    const book = this.books.get(root)
    if (!book) return undefined
    return summary(book.entries.values(), this.unreadRuns(book), max, book.forgotten, book.forgottenTotal)
  }

  /**
   * A root's turn begins (`resumed`: a run resuming a turn parked on a question, whose delegations it
   * goes on counting). Roots in a turn are held in a plain Set, dropped at the turn's end.
   */
  turnStarted(root: Agent, resumed: boolean): void {
    this.inTurn.add(root)
    if (!resumed) {
      const book = this.books.get(root)
      if (book) {
        book.turn = book.carry
        book.carry = undefined
      }
    }
  }

  /**
   * A root's run ended: the account of its turn's delegations and of those earlier turns left unfinished
   * or unread (their states now), or undefined when there are none. Costs what the turn saw, never the
   * whole history of a root that delegated in every turn.
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
    let book = this.books.get(root)
    if (!book) this.books.set(root, book = new TreeBook())
    const entry: DelegationEntry = { runId: info.runId, provider: info.provider, parentId: info.parentId, depth: info.depth, state: 'running' }
    if (info.label !== undefined) entry.label = info.label
    if (info.childId !== undefined) entry.childId = info.childId
    book.entries.set(info.runId, entry)
    if (this.inTurn.has(root)) (book.turn ??= []).push(entry)
    // Only a parent with background delegations can leave a result unread (a sync result is its tool result);
    // its book and its inbox exist before the start is handed over (a sync delegation asks neither: `usedInbox`
    // makes no inbox). A WeakRef per parent costs a delegation a good part of its GC.
    if (!book.parents.has(parent.id) && (parent as { usedInbox?: object }).usedInbox && this.background.peek(parent)) {
      book.parents.set(parent.id, new WeakRef(parent))
    }
    this.open.set(info.runId, book)
  }

  private move(runId: string, state: DelegationState): void {
    const entry = this.open.get(runId)?.entries.get(runId)
    if (entry) entry.state = state
  }

  /** The root agent above `agent` (itself at the top); each agent is walked once. */
  private root(agent: Agent): Agent {
    const path: Agent[] = []
    let at = agent
    let root: Agent | undefined
    while (!(root = this.rootOf.get(at)) && at.parent) {
      path.push(at)
      at = at.parent
    }
    root ??= at
    for (const visited of path) this.rootOf.set(visited, root)
    return root
  }

  /**
   * Runs of the book whose ended result went to its parent as a background message that the parent's
   * model has not read: still in its inbox, or lost unread with a disposed parent.
   */
  private unreadRuns(book: TreeBook): Set<string> {
    const unread = new Set<string>()
    for (const ref of book.parents.values()) {
      const parent = ref.deref()
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

/**
 * The observer that puts a root run's account on its result (`result.children`): it declines every
 * run of an agent with a parent, so a child's run pays nothing for it.
 */
export function rootRunObserver(accounts: DelegationAccounts): AgentObserver {
  return {
    runStart: (agent, _prompt, resumed) => {
      if (agent.parent) return false
      accounts.turnStarted(agent, resumed !== undefined)
    },
    runEnd: (agent, result) => {
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
