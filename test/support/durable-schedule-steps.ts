// Random schedules for test/durable-schedules.slow.spec.ts and the runner that plays one against real
// host processes on one store. A step picks its task by index among the tasks it applies to
// (`pick` modulo their count; a step with none is a no-op), so fast-check shrinks a failing
// schedule to the few steps that matter.
import fc from 'fast-check'
import { BoundError, HostProcess, readLog } from './durable-schedule-client.js'
import { checkLog, checkRestart, lastEnd, type StoreView } from './durable-schedule-invariants.js'
import type { Kind, LogEntry, Mode } from './durable-schedule-model.js'

export type Step =
  | { op: 'start'; mode: Mode; kind: Kind }
  | { op: 'reply' | 'answerRoot' | 'answerId' | 'reattach' | 'resumeRun'; pick: number }
  | { op: 'stop' | 'kill' }

const pick = fc.nat({ max: 7 })
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('start' as const), mode: fc.constantFrom<Mode>('answer', 'escalate', 'bg'), kind: fc.constantFrom<Kind>('finish', 'ask', 'hang') }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('reply' as const, 'answerRoot' as const, 'answerId' as const), pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('reattach' as const, 'resumeRun' as const), pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('stop' as const, 'kill' as const) }) },
)

/** A schedule: 1–10 steps, at most 3 of them restarts (each one is a host process). */
export const schedules = fc.array(step, { minLength: 1, maxLength: 10, size: 'medium' })
  .filter((steps) => steps.filter((s) => s.op === 'stop' || s.op === 'kill').length <= 3)

interface Task {
  name: string
  mode: Mode
  kind: Kind
  /** The host generation whose process holds this task's root, and the root's state there. */
  gen: number
  root: string
  /** Parked on a question nobody answered yet (as far as the harness saw). */
  parked: boolean
}

export interface Played {
  violations: string[]
  /** What happened, step by step, for the report. */
  trace: string[]
}

/**
 * One store, its log and the host process on it, reused by consecutive schedules: a schedule
 * without a stop or kill costs no process start. Task names (`T<n>`) and answers count over the
 * world, so every invariant holds over its whole log. A stop or kill restarts the host in place.
 */
export class World {
  host!: HostProcess
  gen = 0
  tasks = 0
  answers = 0
  schedules = 0
  /** The schedules played here, for a failure that needs its predecessors. */
  readonly history: string[] = []
  /** Where the log of the running host's generation starts (what the next restart checks). */
  since = 0
  /** A violation was found here (kept or not): the next schedule needs a fresh world. */
  tainted = false

  private constructor(readonly store: string, readonly logFile: string) {}

  static async open(store: string, logFile: string): Promise<World> {
    const world = new World(store, logFile)
    world.host = (await HostProcess.start(store, logFile)).host
    return world
  }

  async restart(): Promise<void> {
    this.gen++
    this.host = (await HostProcess.start(this.store, this.logFile)).host
  }

  /** A clean stop of the host, else a kill. */
  async close(): Promise<void> {
    try {
      await this.host.stop()
    } finally {
      await this.host.kill()
    }
  }
}

/** Plays `steps` in `world`; resolves with the violations `keep` keeps. A world that threw or found one must not be reused. */
export async function play(steps: Step[], world: World, keep = (_violation: string) => true): Promise<Played> {
  const trace: string[] = world.schedules++ ? [`(after ${world.schedules - 1} earlier schedules on this store: ${world.history.join(' | ')})`] : []
  world.history.push(steps.map((s) => 'pick' in s ? `${s.op}#${s.pick}` : s.op === 'start' ? `start ${s.mode} ${s.kind}` : s.op).join(', '))
  const violations: string[] = []
  const found = (list: string[]) => {
    if (list.length) world.tainted = true
    violations.push(...list.filter(keep))
  }
  const tasks: Task[] = []
  const log = (): LogEntry[] => readLog(world.logFile)
  const runOf = (task: Task) => log().flatMap((e) => e.k === 'start' && e.task === task.name ? [e.runId] : []).at(-1)
  const note = (what: string, reply: Record<string, unknown>) => {
    const { n: _n, ...rest } = reply
    trace.push(`${what} → ${JSON.stringify(rest).slice(0, 300)}`)
    if (typeof reply.note === 'string') found([`${what}: ${reply.note}`])
  }
  const rest = (task: Task, reply: Record<string, any>) => {
    if (reply.skipped) return
    task.gen = world.gen
    task.root = reply.state
    task.parked = reply.state === 'waiting' || reply.state === 'pending'
  }
  try {
    for (const s of steps) {
      if (s.op === 'start') {
        const task: Task = { name: `T${++world.tasks}`, mode: s.mode, kind: s.kind, gen: world.gen, root: 'none', parked: false }
        tasks.push(task)
        const reply = await world.host.send({ cmd: 'start', task: task.name, mode: s.mode, kind: s.kind })
        note(`start ${task.name} ${s.mode} ${s.kind}`, reply)
        rest(task, reply)
      } else if (s.op === 'stop' || s.op === 'kill') {
        const parked = tasks.filter((t) => t.parked).map(runOf).filter((id): id is string => !!id)
        if (s.op === 'stop') note('stop', await world.host.stop())
        else {
          await world.host.kill()
          trace.push('SIGKILL')
        }
        const before = log().length
        const since = world.since
        world.since = before
        await world.restart()
        const view = await world.host.send({ cmd: 'store' }) as unknown as StoreView
        note('restart; store', { n: 0, pending: view.pending, records: view.records.map((r) => `${r.label}:${r.state}`) })
        found(checkRestart(log(), since, before, s.op, view, parked))
        for (const task of tasks) task.parked = view.pending.includes(runOf(task) ?? '')
      } else if ('pick' in s) {
        const live = (t: Task) => t.gen === world.gen
        const candidates = tasks.filter({
          reply: (t: Task) => live(t) && t.root === 'waiting',
          answerRoot: (t: Task) => live(t) && t.root === 'pending',
          answerId: (t: Task) => t.parked && !!runOf(t),
          reattach: (t: Task) => !live(t) || t.root === 'done' || t.root === 'failed',
          resumeRun: (t: Task) => !t.parked && !!runOf(t) && !(live(t) && t.root === 'hanging'),
        }[s.op])
        if (!candidates.length) continue
        const task = candidates[s.pick % candidates.length]
        const answer = `A${++world.answers}`
        if (s.op === 'reply' || s.op === 'answerRoot') {
          const reply = await world.host.send({ cmd: s.op === 'reply' ? 'reply' : 'answer-root', task: task.name, answer })
          note(`${s.op} ${task.name} ${answer}`, reply)
          rest(task, reply)
        } else if (s.op === 'reattach') {
          const reply = await world.host.send({ cmd: 'reattach', task: task.name, mode: task.mode, kind: task.kind })
          note(`reattach ${task.name}`, reply)
          rest(task, reply)
        } else {
          const reply = await world.host.send({ cmd: 'resume', runId: runOf(task), answer })
          note(`${s.op} ${task.name} (${runOf(task)}) ${answer}`, reply)
          if (s.op === 'answerId' && !reply.error) task.parked = reply.stopReason === 'pending'
        }
      }
      found(checkLog(log()))
      if (violations.length) break
    }
    if (!violations.length) found(await checkDelivery(world.host, tasks.filter((t) => t.gen === world.gen), log, trace))
    found(checkLog(log()))
  } catch (error) {
    world.tainted = true
    if (!(error instanceof BoundError)) throw error
    found([`a waiter outlived its bound: ${error.message}`])
  }
  return { violations: [...new Set(violations)], trace }
}

/**
 * The answer reaches the waiting parent: every live root whose child completed sees the child's
 * output in its transcript, within the bound. A root model still waiting to reply (its child was
 * answered by run id) is let reply, as a model would; its reply must bring the child's result.
 */
async function checkDelivery(host: HostProcess, live: Task[], log: () => LogEntry[], trace: string[]): Promise<string[]> {
  const violations: string[] = []
  for (const task of live) {
    const end = lastEnd(log(), task.name)
    if (end?.stopReason !== 'completed') continue
    if (task.root === 'waiting') {
      const reply = await host.send({ cmd: 'reply', task: task.name, answer: 'late reply' })
      trace.push(`reply ${task.name} late reply → ${JSON.stringify(reply).slice(0, 200)}`)
    }
    const deadline = Date.now() + 10_000
    let seen = ''
    let state = ''
    do {
      const { roots } = await host.send({ cmd: 'roots' })
      seen = roots[task.name]?.seen ?? ''
      state = roots[task.name]?.state ?? 'gone'
      if (seen.includes(end.output)) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    } while (Date.now() < deadline)
    if (!seen.includes(end.output)) violations.push(`root of ${task.name} (${task.mode}) never got its child's result ${JSON.stringify(end.output)}; it is ${state}`)
  }
  return violations
}
