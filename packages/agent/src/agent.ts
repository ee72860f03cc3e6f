import { type ToolView } from '@cordis-subagents/tools'
import { isAbortScope, LazyAbort, type PendingQuestion } from '@cordis-subagents/shared'
import type { Budget } from './budget.js'
import { AgentError } from './errors.js'
import { Transcript, TurnAbort, usageTally, workTally } from './transcript.js'
import { Inbox } from './inbox.js'
import { spendingBudget, Turn } from './turn.js'
import { TurnInterrupt } from './stops.js'
import { type AgentCheckpoint, restoreTurn, takeCheckpoint } from './checkpoint.js'
import type { TurnHost, TurnOwner } from './turn-owner.js'
import type { InFlight } from './abort.js'
import type { AgentUsage, AgentWork, BudgetLimits, Message, ResumeOptions, RunOptions, RunResult } from './types.js'
import { answerRefusal, checkAnswerText, withdrawalRefusal } from './answer-checks.js'
import { closeTurn, questionsOf, resumeTurn } from './parked-turn.js'

/** What an agent needs from the runtime that made it: the runtime's seam (models, gates, budget handlers, observers, hooks). */
export type AgentHost = TurnHost

/** The options `ctx.agents.create` resolved for an agent. */
export interface AgentInit {
  id: string
  parent?: Agent
  depth: number
  cwd: string
  persona?: string
  model?: string
  tools: ToolView
  seed?: readonly Message[] | Transcript
  maxSteps: number
  maxTokens?: number
  label?: string
  /** Most tool calls of one step that run; the rest are answered with an error. */
  maxToolCallsPerStep: number
  /** This agent's own limits (a root's are renewed for every run). */
  budgetLimits?: BudgetLimits
  /** A budget already carved for this agent (by the service that started it as a child). */
  budget?: Budget
  /** A checkpoint (validated) this agent is rebuilt from: its tallies and its parked turn; `seed` holds its messages. */
  restore?: AgentCheckpoint
  /** Most messages its inbox holds (default `MAX_INBOX_MESSAGES`). */
  maxInboxMessages?: number
  output?: import('./output.js').OutputContract
}

/** The reason `lifetime` aborts with: a value of its own, so no error is made at every dispose. */
const DISPOSED = 'disposed'
const disposed = (id: string) => new AgentError('DISPOSED', `Agent ${id} has been disposed; create a new agent.`)

/** A handle id's name part: the label's letters, digits, `_` and `-` (else `-`), `fallback` when there is none. */
const handleName = (label: string | undefined, fallback: string) => label?.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 64) || fallback

const CLOSED_WHILE_PARKED = 'Closed while waiting for an answer: the agent was disposed before anyone answered the question.'

export class Agent {
  readonly id: string
  /**
   * Deterministic, parent-scoped: the parent's handle id `/` this agent's name (its label) `.` the parent's count of
   * children so far (`root/coordinator.1/explore.2`); a root's is its label, else `root`. A name: it grants nothing.
   */
  readonly handleId: string
  readonly parent?: Agent
  readonly depth: number
  readonly cwd: string
  readonly persona?: string
  /** Model ref (`name` or `name:modelId`); undefined means the runtime's default. */
  readonly model?: string
  readonly tools: ToolView
  readonly transcript: Transcript
  readonly maxSteps: number
  readonly maxTokens?: number
  readonly label?: string
  readonly usage: AgentUsage
  /** Model calls, tool calls and delegations of every run so far: own, delegated, total. */
  readonly work: AgentWork
  readonly maxToolCallsPerStep: number
  readonly output?: AgentInit['output']
  /** The budget it spends from: a child's is carved from its parent's at create; a root gets a fresh one every run. */
  budget: Budget
  /** @internal The inbox once anyone used it (made on first use: most agents never get a message or a hold); a turn never makes one. */
  usedInbox?: Inbox
  /** @internal What the host's services keep with this agent (shared's `KeptWith`; a WeakMap keyed by it held it in young collections). */
  keptWith?: Record<symbol, unknown> = undefined
  private readonly budgetLimits?: BudgetLimits
  private readonly owner: TurnOwner
  private current?: TurnAbort
  /** The turn parked on a question, until `resume` continues it or `dispose` closes it. */
  private parkedTurn?: Turn
  /** The question `resume` answered (or `withdraw` withdrew) last, until the next `run` / `wake`: an answer to it is refused. */
  private answered?: PendingQuestion
  private answeredWithdrawn = false
  /** The next leg's result, made when someone asks for it (`nextResult`). */
  private nextLeg?: { promise: Promise<RunResult>; resolve(result: RunResult): void; reject(error: unknown): void }
  private disposal?: Promise<void>
  /** Children not disposed yet (made on first use), and how many it ever had (handle ids). */
  private kids?: Set<Agent>; private born = 0
  /** @internal Aborted when this agent is disposed: a book that keeps the agent after its run lets go of it then (`onAbort`). */
  readonly lifetime = new LazyAbort()
  private last?: RunResult
  private readonly maxInbox?: number
  constructor(host: AgentHost, init: AgentInit) {
    this.id = init.id
    this.parent = init.parent
    this.depth = init.depth
    this.cwd = init.cwd
    this.persona = init.persona; this.model = init.model
    this.tools = init.tools
    this.transcript = new Transcript(init.seed)
    this.maxSteps = init.maxSteps; this.maxTokens = init.maxTokens
    this.label = init.label
    this.maxToolCallsPerStep = init.maxToolCallsPerStep; this.output = init.output
    this.budgetLimits = init.budgetLimits
    const ownsRootBudget = !init.budget && !init.parent
    this.budget = spendingBudget(init.budget, init.parent?.budget, init.budgetLimits)
    this.usage = usageTally(); this.work = workTally()
    this.owner = new Owner(this, host, ownsRootBudget)
    this.maxInbox = init.maxInboxMessages
    const { parent } = this
    this.handleId = parent ? `${parent.handleId}/${handleName(init.label, 'agent')}.${++parent.born}` : handleName(init.label, 'root')
    if (parent) (parent.kids ??= new Set()).add(this)
    if (init.restore) this.parkedTurn = restoreTurn(this, this.owner, init.restore)
  }

  get running(): boolean { return !!this.current }

  get disposed(): boolean { return !!this.disposal }

  /** Children created under this agent that are not disposed yet, oldest first. */
  get children(): Agent[] { return this.kids ? [...this.kids] : [] }

  /** The result of the last leg that ended (`run`, `wake`, `resume`, `withdraw`); kept after dispose. */
  get lastResult(): RunResult | undefined { return this.last }

  /** The question the parked turn waits on (`resume(answer)` continues it); undefined when not parked. */
  get parked(): PendingQuestion | undefined { return this.parkedTurn?.parked?.question }

  /** Every question the parked turn waits on (its step's suspended calls, in call order, each once); `parked` is the first. */
  get waitingOn(): PendingQuestion[] { return this.parkedTurn?.parked ? questionsOf(this.parkedTurn.parked) : [] }

  /** Runs one turn. Rejects only for misuse (`BUSY`, `PARKED`, `DISPOSED`, `INVALID_PROMPT`, `INVALID_OPTIONS`). */
  async run(prompt: string, options: RunOptions = {}): Promise<RunResult> {
    this.checkIdle()
    checkRunArguments(prompt, options)
    return this.drive(this.newTurn(), options, (turn, abort) => turn.start(prompt, abort, options))
  }

  /** Messages for this agent's next model call, and holds that keep its turn from ending (see `Inbox`). */
  get inbox(): Inbox {
    if (this.usedInbox) return this.usedInbox
    this.usedInbox = new Inbox(this.id, this.maxInbox)
    if (this.disposal) this.usedInbox.close()
    return this.usedInbox
  }

  /** Runs a turn with no new prompt, on what waits in the inbox. Rejects with `EMPTY_INBOX` when nothing does. */
  async wake(options: RunOptions = {}): Promise<RunResult> {
    this.checkIdle()
    checkRunArguments('', options)
    if (!this.usedInbox?.size) throw new AgentError('EMPTY_INBOX', `Agent ${this.id} has no messages in its inbox to wake on; post one first (agent.inbox.post).`)
    return this.drive(this.newTurn(), options, (turn, abort) => turn.start(undefined, abort, options))
  }

  /**
   * Continues the parked turn with `answer` to its question (`parked`, or `options.questionId`:
   * one of `waitingOn`). Resolves with the turn's next outcome: its tallies cover the whole turn.
   * Rejects with `ALREADY_ANSWERED`, `NOT_PARKED`, `BUSY`, `DISPOSED`, `INVALID_PROMPT`, `INVALID_OPTIONS`.
   */
  async resume(answer: string, options: ResumeOptions = {}): Promise<RunResult> { return this.goOn(answer, options, options?.questionId) }

  /**
   * Continues the parked turn past question `questionId` (one of `waitingOn`) without an answer: its asker no longer waits
   * (a child that asked it ended). Each call suspended on it gets its tool's `withdrawn` result (a delegation: the child's
   * outcome); a later `resume` for it is refused `NOT_PARKED`; calls on other questions keep waiting. Resolves like
   * `resume`; rejects with `NOT_PARKED`, `BUSY`, `DISPOSED`, `INVALID_OPTIONS`.
   */
  async withdraw(questionId: string, options: RunOptions = {}): Promise<RunResult> { return this.goOn(undefined, options, questionId) }

  /** `resume` (with an answer) or `withdraw` (without): the parked turn goes on past question `questionId` (undefined: the first). */
  private goOn(answer: string | undefined, options: RunOptions, questionId: string | undefined): Promise<RunResult> {
    if (this.disposal) throw disposed(this.id)
    const turn = this.parkedTurn
    const refused = answerRefusal(this.id, !!this.current, turn?.parked, this.answered, questionId, this.answeredWithdrawn)
      ?? (answer === undefined ? withdrawalRefusal(this.id, turn!.parked!, questionId!) : undefined)
    if (refused) throw refused
    if (answer !== undefined) checkAnswerText(answer)
    checkRunArguments(answer ?? '', options)
    this.answered = questionId === undefined ? turn!.parked!.question : this.waitingOn.find((question) => question.id === questionId)
    this.answeredWithdrawn = answer === undefined
    this.parkedTurn = undefined
    return this.drive(turn!, options, (parked, abort) => resumeTurn(parked, answer, abort, options, questionId))
  }

  /**
   * The result of the leg running now (`run`, `wake`, `resume`), else of the next one to start, whoever starts it (a root
   * parked on a child's question goes on when someone answers the child by run id, and its holder reads the continued
   * turn here). Every caller until that leg ends gets the same promise. Rejects with `DISPOSED` when disposed first.
   */
  nextResult(): Promise<RunResult> {
    if (this.disposal && !this.current) return Promise.reject(disposed(this.id))
    if (this.nextLeg) return this.nextLeg.promise
    let settle!: { resolve(result: RunResult): void; reject(error: unknown): void }
    const promise = new Promise<RunResult>((resolve, reject) => settle = { resolve, reject })
    // A caller that stops listening must not leave an unhandled rejection behind at dispose.
    promise.catch(() => {})
    this.nextLeg = { promise, ...settle }
    return promise
  }

  /** Aborts the running turn, if any; it ends `aborted` with `reason` in its diagnostic. */
  abort(reason?: unknown): void {
    this.current?.abort(reason)
  }

  /**
   * Interrupts the running turn, if any: it ends `interrupted` (not `aborted`), the agent stays usable with its transcript,
   * and inbox messages the interrupted step had read but the model had not answered go back to the inbox, in order.
   */
  interrupt(reason?: unknown): void {
    this.current?.abort(new TurnInterrupt(reason))
  }

  /**
   * A plain-JSON snapshot to rebuild this agent with `ctx.agents.create({ restore })`: its settings, transcript, tallies
   * and, when parked, the parked turn. Taken while a turn runs, it holds only the completed turns.
   */
  checkpoint(): AgentCheckpoint { return takeCheckpoint(this, this.parkedTurn) }

  /** `checkpoint()` for later, of an agent that will not run again (disposed): it holds what the checkpoint is made of (settings,
   * transcript, tallies), not the agent, nor through it its parent, budget and tools (what a child kept for a continue holds). */
  checkpointLater(): () => AgentCheckpoint {
    const { id, label, depth, cwd, persona, model, maxSteps, maxTokens, maxToolCallsPerStep, output, transcript, usage, work } = this
    return () => takeCheckpoint({ id, label, depth, cwd, persona, model, maxSteps, maxTokens, maxToolCallsPerStep, output,
      transcript, usage, work }, undefined)
  }

  /** Aborts a running turn (or closes a parked one), then waits for it and for any tool still settling. Idempotent. */
  dispose(): Promise<void> {
    this.disposal ??= (async () => {
      this.lifetime.abort(DISPOSED)
      this.usedInbox?.close()
      this.parent?.kids?.delete(this)
      if (this.parkedTurn) closeTurn(this.parkedTurn, CLOSED_WHILE_PARKED)
      this.parkedTurn = undefined
      const current = this.current
      if (current) {
        current.abort(new AgentError('DISPOSED', `Agent ${this.id} was disposed.`))
        await current.done.catch(() => {})
      }
      const settling = this.owner.inFlight?.settled()
      if (settling) await settling
      this.nextLeg?.reject(disposed(this.id))
      this.nextLeg = undefined
    })()
    return this.disposal
  }

  private checkIdle(): void {
    if (this.disposal) throw disposed(this.id)
    if (this.current) throw new AgentError('BUSY', `Agent ${this.id} is already running a turn; wait for it or abort it first.`)
    if (this.parkedTurn) throw new AgentError('PARKED', `Agent ${this.id} is parked on a question (agent.parked); answer it with resume(answer), or dispose the agent.`)
  }

  /** A new turn; a root agent's budget is renewed for it (a tree's limits are per root run). */
  private newTurn(): Turn {
    this.answered = undefined
    this.answeredWithdrawn = false
    if (this.owner.ownsRootBudget) this.budget = spendingBudget(undefined, undefined, this.budgetLimits)
    return new Turn(this.owner, this.budget)
  }

  /** One leg of a turn (`run`, `wake`, `resume`): the abort wiring, and a turn that parks kept for `resume`. */
  private drive(turn: Turn, options: RunOptions, go: (turn: Turn, abort: TurnAbort) => Promise<RunResult>): Promise<RunResult> {
    // A promise chain, not an async function: a child waiting on its model holds no suspended frame here.
    const abort = new TurnAbort(this.owner, options.abortScope ?? options.signal)
    // Mark the agent busy before the turn starts: the turn runs synchronously up to its first
    // await (events, the model call), and a run started from there must see BUSY.
    this.current = abort
    let done: Promise<RunResult>
    try {
      done = go(turn, abort)
    } catch (error) {
      this.legFailed(abort, error)
      return Promise.reject(error)
    }
    abort.done = done
    return done.then((result) => this.legEnded(turn, abort, result), (error: unknown) => {
      this.legFailed(abort, error)
      throw error
    })
  }

  private legEnded(turn: Turn, abort: TurnAbort, result: RunResult): RunResult {
    this.last = result
    try {
      if (result.stopReason === 'pending') {
        // Disposed while the leg ran: the turn is closed at once (dispose waits for this leg first).
        if (this.disposal) closeTurn(turn, CLOSED_WHILE_PARKED)
        else this.parkedTurn = turn
      }
      const next = this.nextLeg
      this.nextLeg = undefined
      next?.resolve(result)
      return result
    } finally {
      this.legDone(abort)
    }
  }

  /** A leg that fails ends every `nextResult()` waiting for it too, with its error. */
  private legFailed(abort: TurnAbort, error: unknown): void {
    this.legDone(abort)
    const next = this.nextLeg
    this.nextLeg = undefined
    next?.reject(error)
  }

  private legDone(abort: TurnAbort): void {
    abort.detach()
    this.current = undefined
  }
}

/** Misuse of `Agent.run` fails at the call, with what to pass instead. */
function checkRunArguments(prompt: unknown, options: RunOptions): void {
  if (typeof prompt !== 'string') throw new AgentError('INVALID_PROMPT', 'The prompt must be a string.')
  if (options === null || typeof options !== 'object') throw new AgentError('INVALID_OPTIONS', 'run() takes an options object { signal?, onEvent?, onSpend? }.')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new AgentError('INVALID_OPTIONS', 'options.signal must be an AbortSignal (e.g. new AbortController().signal).')
  }
  if (options.abortScope !== undefined && (!isAbortScope(options.abortScope) || options.signal !== undefined)) {
    throw new AgentError('INVALID_OPTIONS', 'options.abortScope must be an AbortScope (e.g. a LazyAbort of @cordis-subagents/shared), and not given with signal.')
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') throw new AgentError('INVALID_OPTIONS', 'options.onEvent must be a function.')
  if (options.onSpend !== undefined && typeof options.onSpend !== 'function') throw new AgentError('INVALID_OPTIONS', 'options.onSpend must be a function.')
}

// A class, not a literal: an owner made old from birth would keep its agent alive through young collections (bench/README).
class Owner { inFlight?: InFlight; constructor(readonly agent: Agent, readonly host: TurnHost, readonly ownsRootBudget: boolean) {} }
