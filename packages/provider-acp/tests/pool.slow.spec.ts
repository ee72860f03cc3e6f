/// <reference types="mocha" />
import { expect } from 'chai'
import type { SubagentRun, SubagentUpdate } from '@cordis-subagents/subagents-service'
import type { AcpProvider } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fakeParent, fixtureProcesses, fixtureProvider, isAlive, request, until } from './helpers.js'

/** What the `sessions` fixture answers a plain prompt with. */
interface Answer {
  pid: number
  sid: string
  opened: number
  depth: string | null
  /** The prompt's `_meta`. */
  promptMeta: Record<string, unknown> | null
}

describe('provider-acp: warm spares and reused processes (opt-in pool)', () => {
  const runs: SubagentRun[] = []
  const providers: AcpProvider[] = []

  function provider(options: Record<string, unknown>, mode = 'sessions', arg?: string) {
    const created = fixtureProvider(mode, arg, options)
    providers.push(created)
    return created
  }

  let counter = 0
  async function start(acp: AcpProvider, prompt = 'answer', overrides: Record<string, unknown> = {}) {
    const req = request({ prompt, runId: `pool-run-${++counter}`, ...overrides })
    const run = await acp.start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  async function answer(acp: AcpProvider, overrides: Record<string, unknown> = {}) {
    const { run, updates } = await start(acp, 'answer', overrides)
    const result = await run.result
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    await run.dispose()
    return { run, updates, answer: JSON.parse(result.output) as Answer }
  }

  /** Waits until the pool has `idle` processes ready and none starting. */
  function ready(acp: AcpProvider, idle = 1) {
    return until(() => {
      const counts = acp.pool!.counts()
      return counts.idle === idle && counts.starting === 0 && counts.stopping === 0
    }, `${idle} idle pooled process(es)`)
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    assertNoLeftovers()
  })

  it('is off by default: no pool, one cold process per run, no process-kind update', async () => {
    const acp = provider({})
    expect(acp.pool).to.equal(undefined)
    const first = await answer(acp)
    const second = await answer(acp)
    expect(first.answer.pid).to.not.equal(second.answer.pid)
    expect(first.run.processKind).to.equal('cold')
    expect(first.updates.filter((update) => update.kind === 'status')).to.deep.equal([])
    await acp.reaped()
    expect(fixtureProcesses()).to.deep.equal([])
  })

  it('warm: the first run is cold and starts a spare; the next run takes the spare, which is replaced', async () => {
    const acp = provider({ warm: true })
    const first = await answer(acp)
    expect(first.run.processKind).to.equal('cold')
    expect(first.updates[0]).to.deep.equal({ kind: 'status', text: 'cold process' })
    await ready(acp)
    const [spare] = acp.pool!.idlePids()
    // Without reuse the first run's process is gone once it ended.
    await until(() => !isAlive(first.answer.pid), 'the cold process to stop')
    const second = await answer(acp)
    expect(second.run.processKind).to.equal('warm')
    expect(second.updates[0]).to.deep.equal({ kind: 'status', text: 'warm process' })
    expect(second.answer.pid).to.equal(spare)
    expect(second.answer.opened).to.equal(1)
    // Used: a new spare takes its place, and the used one is not kept (reuse is off).
    await ready(acp)
    expect(acp.pool!.idlePids()).to.not.include(spare)
    await until(() => !isAlive(spare), 'the used spare to stop')
  })

  it('warm: a spare opens its session ahead, and a run uses it even when its budget or trace differ (sent with its prompt then)', async () => {
    const acp = provider({ warm: true })
    await answer(acp)
    await ready(acp)
    const [spare] = acp.pool!.idlePids()
    const same = await answer(acp)
    expect(same.answer.pid).to.equal(spare)
    // The session opened ahead is the run's: no second session/new on that process, and nothing to add to the prompt.
    expect(same.answer).to.deep.include({ opened: 1, sid: `sess-${spare}-1`, promptMeta: null })
    await ready(acp)
    const [next] = acp.pool!.idlePids()
    // What is left of the budget changes with every delegation: the session opened ahead is still the
    // run's, and the run's crossing (its remaining budget) goes with its prompt.
    const spent = await answer(acp, { budget: { remaining: () => ({ maxSteps: 7 }) } as never })
    expect(spent.run.processKind).to.equal('warm')
    expect(spent.answer).to.deep.include({ pid: next, opened: 1, sid: `sess-${next}-1` })
    expect(spent.answer.promptMeta).to.deep.equal({ cordisSubagents: { depth: 1, budget: { maxSteps: 7 } } })
    await ready(acp)
    const [third] = acp.pool!.idlePids()
    // So does another trace context: the prompt carries it (as every traced prompt does) with the crossing.
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const traced = await answer(acp, { traceContext: { traceparent } })
    expect(traced.answer).to.deep.include({ pid: third, opened: 1, sid: `sess-${third}-1` })
    expect(traced.answer.promptMeta).to.deep.include({ traceparent })
    expect(traced.answer.promptMeta).to.have.property('cordisSubagents')
  })

  it('reuse: a cleanly finished run gives its process back; the next run opens a new session on it', async () => {
    const acp = provider({ reuse: true })
    const first = await answer(acp)
    await ready(acp)
    const second = await answer(acp)
    expect(second.run.processKind).to.equal('reused')
    expect(second.updates[0]).to.deep.equal({ kind: 'status', text: 'reused process' })
    expect(second.answer.pid).to.equal(first.answer.pid)
    expect(second.answer.sid).to.not.equal(first.answer.sid)
    expect(second.answer.opened).to.equal(2)
    expect(second.run.childId).to.equal(second.answer.sid)
  })

  it('reuse only where the environment matches: a run at another depth gets its own process', async () => {
    const acp = provider({ reuse: true })
    const first = await answer(acp)
    await ready(acp)
    const deeper = await answer(acp, { depth: 2, parent: fakeParent(process.cwd(), 1) })
    expect(deeper.run.processKind).to.equal('cold')
    expect(deeper.answer.pid).to.not.equal(first.answer.pid)
    expect(deeper.answer.depth).to.equal('2')
  })

  it('reuse stops a process after maxSessionsPerProcess sessions', async () => {
    const acp = provider({ reuse: true, maxSessionsPerProcess: 2 })
    const first = await answer(acp)
    await ready(acp)
    const second = await answer(acp)
    expect(second.answer.pid).to.equal(first.answer.pid)
    await until(() => !isAlive(first.answer.pid), 'the process to stop after its second session')
    const third = await answer(acp)
    expect(third.run.processKind).to.equal('cold')
    expect(third.answer.pid).to.not.equal(first.answer.pid)
  })

  it('an agent that refuses a second session: the run falls back to a fresh process; the refusing one is stopped', async () => {
    const acp = provider({ reuse: true }, 'sessions', 'single')
    const first = await answer(acp)
    await ready(acp)
    const second = await answer(acp)
    expect(second.run.processKind).to.equal('cold')
    expect(second.answer.pid).to.not.equal(first.answer.pid)
    await until(() => !isAlive(first.answer.pid), 'the refusing process to stop')
  })

  it('a cancelled run (a timeout is a cancel) never gives its process back, even when the agent honoured the cancel', async () => {
    const acp = provider({ reuse: true })
    const { run } = await start(acp, 'wait')
    const pid = run.pid!
    run.cancel('timeout')
    expect((await run.result).stopReason).to.equal('aborted')
    await run.dispose()
    await acp.reaped()
    expect(isAlive(pid)).to.equal(false)
    expect(acp.pool!.counts()).to.deep.include({ idle: 0, busy: 0 })
    const next = await answer(acp)
    expect(next.run.processKind).to.equal('cold')
    expect(next.answer.pid).to.not.equal(pid)
  })

  it('a run whose agent ignored the cancel (SIGTERM needed) or crashed never leaves a process in the pool', async () => {
    const acp = provider({ reuse: true, warm: true, spares: 1 })
    const { run } = await start(acp, 'ignore')
    const pid = run.pid!
    run.cancel('timeout')
    expect((await run.result).stopReason).to.equal('aborted')
    await run.dispose()
    await acp.reaped()
    expect(isAlive(pid)).to.equal(false)
    const crashed = await start(acp, 'crash')
    expect((await crashed.run.result).stopReason).to.equal('error')
    await crashed.run.dispose()
    await acp.reaped()
    expect(isAlive(crashed.run.pid!)).to.equal(false)
    await ready(acp)
    expect(acp.pool!.idlePids()).to.not.include.members([pid, crashed.run.pid!])
  })

  it('spares are stopped after idleTimeout', async () => {
    const acp = provider({ warm: true, reuse: true, spares: 2, idleTimeout: 300 })
    await answer(acp)
    // The two spares started when the first run took its (cold) process, and that process given
    // back, each become idle (not necessarily at once: under load a spare can take longer to start
    // than idleTimeout, so the first may already be gone) ...
    const idle = new Set<number>()
    await until(() => {
      for (const pid of acp.pool!.idlePids()) idle.add(pid)
      return idle.size === 3
    }, 'three processes to have been idle')
    // ... and all go once idle for idleTimeout.
    await until(() => fixtureProcesses().length === 0 && acp.pool!.counts().idle === 0, 'idle processes to stop')
  })

  it('never keeps more than maxProcesses alive: no spare while a run holds the only slot', async () => {
    const acp = provider({ warm: true, maxProcesses: 1 })
    const { run } = await start(acp, 'wait')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(acp.pool!.counts()).to.deep.equal({ starting: 0, idle: 0, busy: 1, stopping: 0 })
    expect(fixtureProcesses()).to.have.length(1)
    run.cancel()
    await run.dispose()
    // With the run gone there is room for the spare.
    await ready(acp)
    expect(fixtureProcesses()).to.have.length(1)
  })

  it('stop() reaps spares and idle processes at once; a live run keeps its process until it ends, which then stops', async () => {
    const acp = provider({ warm: true, reuse: true, spares: 2 })
    const { run } = await start(acp, 'wait')
    await ready(acp, 2)
    const spares = acp.pool!.idlePids()
    await acp.stop()
    for (const pid of spares) expect(isAlive(pid), `spare ${pid}`).to.equal(false)
    expect(isAlive(run.pid!)).to.equal(true)
    run.cancel()
    await run.dispose()
    expect(isAlive(run.pid!)).to.equal(false)
    expect(acp.pool!.counts()).to.deep.equal({ starting: 0, idle: 0, busy: 0, stopping: 0 })
  })

  it('updates of a reused process reach only the run of their session', async () => {
    const acp = provider({ reuse: true })
    await answer(acp)
    await ready(acp)
    const { run, updates } = await start(acp, 'answer')
    await run.result
    await run.dispose()
    const texts = updates.filter((update): update is SubagentUpdate & { kind: 'text' } => update.kind === 'text')
    expect(texts).to.have.length(1)
    expect(JSON.parse(texts[0].text!).sid).to.equal(run.childId)
  })
})
