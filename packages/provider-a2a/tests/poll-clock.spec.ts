// Following a task by polls (`pollTask`, no server) while the wall clock steps: `stuckTimeout` and `idleTimeout`
// are measured on the monotonic clock, so a step neither ends a healthy task early nor keeps a stuck one alive.
import { expect } from 'chai'
import { type Task, TaskState } from '@a2a-js/sdk'
import { withSteppedClock } from '@cordis-subagents/test-support'
import { type Follower, pollTask } from '../src/follow.js'
import { TaskView } from '../src/task-view.js'
import type { A2aWire, WireOptions } from '../src/wire.js'
import { within } from './helpers.js'

const HOUR = 3_600_000
/** Only ends a wait that would otherwise hang. */
const BOUND = 3_000
const WORKING: Task = {
  id: 'task-1', contextId: 'ctx-1', artifacts: [], history: [], metadata: undefined,
  status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: '2025-01-01T00:00:00.000Z' },
}

/** A run polling a task that stays `working` unchanged; `answer(n)` gives the n-th poll's answer (it may step the clock). */
function follower(limits: { idleTimeout: number; stuckTimeout: number }, answer: (n: number) => Task) {
  const view = new TaskView(64 * 1024)
  view.applyTask(WORKING)
  let polls = 0
  let over = false
  let tenth!: () => void
  const tenPolls = new Promise<void>((resolve) => tenth = resolve)
  const run: Follower = {
    view,
    wire: { getTask: async () => (++polls === 10 && tenth(), answer(polls)) } as unknown as A2aWire,
    limits: { requestTimeout: 1_000, pollInterval: 2, ...limits },
    options: () => ({ signal: new AbortController().signal, serviceParameters: {} }) as WireOptions,
    abort: () => {},
    done: () => over,
    forward: () => {},
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    describe: (error) => String((error as Error)?.message ?? error),
    fail: () => {},
  }
  return { run, tenPolls, end: () => { over = true } }
}

describe('provider-a2a: polling across a wall-clock step', () => {
  it('a task unchanged for less than stuckTimeout is not ended as stuck when the clock steps forward', () => withSteppedClock(async (step) => {
    const { run, tenPolls, end } = follower({ idleTimeout: 60_000, stuckTimeout: 60_000 }, (n) => {
      if (n === 2) step(HOUR)
      return WORKING
    })
    const following = pollTask(run, () => false)
    const ended = following.then(() => 'ended', (error: Error) => error.message)
    expect(await within(Promise.race([tenPolls.then(() => 'polling'), ended]), BOUND, 'ten polls')).to.equal('polling')
    end()
    expect(await within(ended, BOUND, 'the poll loop')).to.equal('ended')
  }))

  it('polls that fail are not ended by idleTimeout when the clock steps forward', () => withSteppedClock(async (step) => {
    const { run, tenPolls, end } = follower({ idleTimeout: 60_000, stuckTimeout: 60_000 }, (n) => {
      if (n === 2) step(HOUR)
      throw new Error('a blip')
    })
    const following = pollTask(run, () => false)
    const ended = following.then(() => 'ended', (error: Error) => error.message)
    expect(await within(Promise.race([tenPolls.then(() => 'polling'), ended]), BOUND, 'ten polls')).to.equal('polling')
    end()
    expect(await within(ended, BOUND, 'the poll loop')).to.equal('ended')
  }))

  it('a task that shows no change still ends by stuckTimeout when the clock steps back', () => withSteppedClock(async (step) => {
    const { run, end } = follower({ idleTimeout: 60_000, stuckTimeout: 50 }, (n) => {
      if (n === 1) step(-HOUR)
      return WORKING
    })
    try {
      const error = await within(pollTask(run, () => false).then(() => undefined, (e: Error) => e), BOUND, 'the stuck verdict')
      expect(error?.message).to.match(/no progress for 50 ms \(stuckTimeout\)/)
    } finally {
      end()
    }
  }))

  it('polls that keep failing still end by idleTimeout when the clock steps back', () => withSteppedClock(async (step) => {
    const { run, end } = follower({ idleTimeout: 50, stuckTimeout: 60_000 }, (n) => {
      if (n === 1) step(-HOUR)
      throw new Error('a blip')
    })
    try {
      const error = await within(pollTask(run, () => false).then(() => undefined, (e: Error) => e), BOUND, 'the idle verdict')
      expect(error?.message).to.match(/no poll was answered for 50 ms \(idleTimeout\).*a blip/)
    } finally {
      end()
    }
  }))
})
