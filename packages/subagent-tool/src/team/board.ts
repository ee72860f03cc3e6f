// A team's board: its members' handles and a shared, bounded task list (add, claim exactly once,
// complete). One board per coordinator run (one turn of the agent whose team tool started the members),
// closed when that run ends (talk-load.ts).
import { CodedError, headChars, quotedLines } from '@cordis-subagents/shared'
import { AgentHandle, type Agent } from '@cordis-subagents/agent'

/** Most tasks one board (one coordinator run) holds, open, claimed and done together; an `add` past it gets `TASK_LIST_FULL`. */
export const MAX_TEAM_TASKS = 256
/** Most members one board remembers (running or ended); past it the oldest ended member is forgotten. */
const MAX_TEAM_MEMBERS = 256
/**
 * Longest a board call waits for members whose start is on its way (ms): siblings of one step start within
 * moments, but a start queued behind the service's per-parent gate may wait for a running member to end.
 */
const JOIN_WAIT_MS = 1_000
/** Longest task title, and longest completion note (characters). */
export const MAX_TASK_TEXT = 2_000

export type TeamErrorCode =
  | 'NOT_A_MEMBER' | 'NO_SUCH_MEMBER' | 'AMBIGUOUS_MEMBER' | 'MEMBER_CLOSED' | 'TASK_LIST_FULL'
  | 'NO_SUCH_TASK' | 'NO_OPEN_TASK' | 'ALREADY_CLAIMED' | 'NOT_CLAIMER' | 'ALREADY_DONE' | 'INVALID_TASK' | 'BOARD_CLOSED'

export class TeamError extends CodedError<TeamErrorCode> {
  override name = 'TeamError'
}

type TaskState = 'open' | 'claimed' | 'done'

export interface TeamTask {
  readonly id: number
  readonly title: string
  state: TaskState
  /** The member that added it (its handle id). */
  readonly addedBy: string
  claimedBy?: string
  note?: string
}

interface Member {
  name: string
  agent: Agent
  handle: AgentHandle
}

export class TeamBoard {
  private readonly members = new Map<Agent, Member>()
  private readonly tasks: TeamTask[] = []
  /** Members whose start is on its way (their delegation is being handed over): who waits to learn them. */
  private readonly joining = new Set<Promise<void>>()
  /** Wakes whoever waits for a member to join (`until`). */
  private wake?: () => void
  /** Set by `close`: the coordinator run this board belongs to has ended. */
  private ended = false

  /** `coordinator`: the agent whose team this is (told about a message nobody could read). */
  constructor(private readonly coordinator: Agent) {}

  /** Whether the run this board belongs to has ended (`close`): every call of it is refused `BOARD_CLOSED`. */
  get closed(): boolean {
    return this.ended
  }

  /**
   * The coordinator run ended: its tasks go, and every later call (a member still at work, or continued after an
   * answer) is refused `BOARD_CLOSED`. The members stay for `bounce` only: a message one of them never read still
   * goes back to its sender or the coordinator. The coordinator no longer holds the board, so it lives only as long
   * as its members do.
   */
  close(): void {
    if (this.ended) return
    this.ended = true
    this.tasks.length = 0
    this.joining.clear()
    this.changed()
  }

  /** Records a running member (`name`: its definition) under its own agent; a closed board takes none. */
  join(name: string, agent: Agent): void {
    if (this.ended) return
    if (this.members.size >= MAX_TEAM_MEMBERS) {
      for (const [key, member] of this.members) {
        if (!member.agent.disposed) continue
        this.members.delete(key)
        break
      }
    }
    const member = { name, agent, handle: AgentHandle.of(agent) }
    this.members.set(agent, member)
    this.changed()
    // A teammate's message the member never read (it ended first) goes back to its sender, loudly.
    agent.inbox.onClose((unread) => {
      for (const message of unread) if (message.from !== undefined) this.bounce(member, message.from, message.content)
    })
  }

  private bounce(target: Member, from: string, content: string): void {
    const sender = [...this.members.values()].find((member) => member.handle.id === from)
    if (!sender) return
    // Quoted line by line: only the `[team]` line starts a line, so the bounced text cannot pose as a notice of ours.
    const excerpt = quotedLines(headChars(content, 200, '…'))
    const notice = `[team] Your message to ${target.handle.id} (${target.name}) was not read: it ended first.\n${excerpt}`
    try {
      // A sender that still runs reads it at its next model call; else the coordinator (its inbox outlives its turns).
      if (sender.agent.running) return void sender.handle.post(notice)
    } catch {
      // Full or closed: the coordinator is told instead.
    }
    try {
      AgentHandle.of(this.coordinator).post(`[team] A message from ${from} to ${target.handle.id} was not read: ${target.name} ended first.\n${excerpt}`)
    } catch {
      // The coordinator is closed too: nobody of this team is left to tell.
    }
  }

  /** Keeps a member's start in view until `started` settles (see `member`). */
  expect(started: Promise<unknown>): void {
    const done: Promise<void> = started.then(() => {}, () => {}).finally(() => {
      this.joining.delete(done)
      this.changed()
    })
    this.joining.add(done)
  }

  /** The member `agent` is, waiting for starts still on their way; `NOT_A_MEMBER` when it is none of this team's. */
  async member(agent: unknown): Promise<Member> {
    this.checkOpen()
    await this.until(() => this.members.has(agent as Agent))
    this.checkOpen()
    const member = this.members.get(agent as Agent)
    if (!member) throw new TeamError('NOT_A_MEMBER', 'Only a member of a running team can use its board and post to its members; this agent is none.')
    return member
  }

  /** The sibling `to` names (a member's name, when one member has it, or a handle id), never `from` itself. */
  recipient(from: Member, to: string): Member {
    const others = [...this.members.values()].filter((member) => member !== from)
    const byId = others.find((member) => member.handle.id === to)
    if (byId) return byId
    const named = others.filter((member) => member.name === to)
    const running = named.filter((member) => !member.agent.disposed)
    if (running.length > 1) {
      throw new TeamError('AMBIGUOUS_MEMBER', `${running.length} members named "${to}" are running; name one by its handle id: ${running.map((member) => member.handle.id).join(', ')}.`)
    }
    const found = running[0] ?? named.at(-1)
    if (!found) {
      const names = [...new Set(others.map((member) => member.name))].sort()
      throw new TeamError('NO_SUCH_MEMBER', `No teammate named "${to}". Teammates: ${names.join(', ') || '(none yet)'}.`)
    }
    return found
  }

  /**
   * Posts `message` from `from` to the sibling `to` names (after the starts on their way: a sibling started in
   * the same step is known): `MEMBER_CLOSED` when it is not running, else the inbox's own errors.
   */
  async post(from: Member, to: string, message: string): Promise<Member> {
    this.checkOpen()
    await this.until(() => [...this.members.values()].some((member) => member !== from && (member.name === to || member.handle.id === to)))
    this.checkOpen()
    const target = this.recipient(from, to)
    // A member that is not running will never read it (its delegation ended): refused, not queued.
    if (target.agent.disposed || !target.agent.running) {
      throw new TeamError('MEMBER_CLOSED', `Teammate ${target.handle.id} (${target.name}) is not running any more; the message was not delivered.`)
    }
    target.handle.post(message, { from: from.handle })
    return target
  }

  /** Resolves once `found()` holds, no start is on its way, or `JOIN_WAIT_MS` passed: never waits unbounded. */
  private async until(found: () => boolean): Promise<void> {
    if (found() || !this.joining.size) return
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<void>((resolve) => timer = setTimeout(resolve, JOIN_WAIT_MS))
    let over = false
    void deadline.then(() => { over = true })
    try {
      while (!found() && this.joining.size && !over) await Promise.race([new Promise<void>((resolve) => this.onChange(resolve)), deadline])
    } finally {
      clearTimeout(timer)
    }
  }

  private onChange(listener: () => void): void {
    const previous = this.wake
    this.wake = () => {
      previous?.()
      listener()
    }
  }

  private changed(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  /** Adds an open task; `TASK_LIST_FULL` past `MAX_TEAM_TASKS` (done tasks count: a run's list drops none). */
  add(by: Member, title: string): TeamTask {
    this.checkOpen()
    const text = checkText(title, 'A task title')
    if (this.tasks.length >= MAX_TEAM_TASKS) {
      const open = this.tasks.filter((task) => task.state === 'open').length
      throw new TeamError('TASK_LIST_FULL', `The team's task list is full: it holds ${MAX_TEAM_TASKS} tasks (open, claimed and done `
        + `together; ${open} open), the most one coordinator run keeps, and it drops none until that run ends. Add no more: `
        + 'claim and finish the open ones, or put the rest of the work in your answer for your coordinator to hand out.')
    }
    const task: TeamTask = { id: this.tasks.length + 1, title: text, state: 'open', addedBy: by.handle.id }
    this.tasks.push(task)
    return task
  }

  /** Claims task `id` (else the oldest open one) for `by`: exactly once, whoever asks. */
  claim(by: Member, id?: number): TeamTask {
    this.checkOpen()
    const task = id === undefined ? this.tasks.find((open) => open.state === 'open') : this.task(id)
    if (!task) throw new TeamError('NO_OPEN_TASK', 'No open task is left on the team\'s list.')
    if (task.state !== 'open') {
      throw new TeamError('ALREADY_CLAIMED', `Task ${task.id} was claimed by ${task.claimedBy}${task.state === 'done' ? ' and is done' : ''}; claim another.`)
    }
    task.state = 'claimed'
    task.claimedBy = by.handle.id
    return task
  }

  /** Completes task `id`, which `by` claimed. */
  complete(by: Member, id: number, note?: string): TeamTask {
    this.checkOpen()
    const task = this.task(id)
    if (task.state === 'done') throw new TeamError('ALREADY_DONE', `Task ${task.id} is done already.`)
    if (task.claimedBy !== by.handle.id) {
      throw new TeamError('NOT_CLAIMER', `Task ${task.id} is ${task.state === 'open' ? 'not claimed; claim it first' : `claimed by ${task.claimedBy}, not by you`}.`)
    }
    task.state = 'done'
    if (note !== undefined) task.note = checkText(note, 'A completion note')
    return task
  }

  /** Every task, oldest first (copies). */
  list(): TeamTask[] {
    this.checkOpen()
    return this.tasks.map((task) => ({ ...task }))
  }

  private checkOpen(): void {
    if (!this.ended) return
    throw new TeamError('BOARD_CLOSED', 'The coordinator run that started you has ended, and its team board (tasks, teammates) with '
      + 'it; nothing was changed. Finish your own task without the board and put what your teammates needed in your answer.')
  }

  private task(id: number): TeamTask {
    const task = Number.isSafeInteger(id) ? this.tasks[id - 1] : undefined
    if (!task) throw new TeamError('NO_SUCH_TASK', `No task ${String(id)} on the team's list (tasks 1-${this.tasks.length}).`)
    return task
  }
}

function checkText(text: unknown, what: string): string {
  if (typeof text !== 'string' || !text.trim()) throw new TeamError('INVALID_TASK', `${what} must be a non-empty string.`)
  if (text.length > MAX_TASK_TEXT) throw new TeamError('INVALID_TASK', `${what} is at most ${MAX_TASK_TEXT} characters (got ${text.length}).`)
  return text
}
