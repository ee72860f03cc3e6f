// An abort or a provider stop after the remote took the task but before it named it (its first stream
// event or the send's answer is late): the start waits for the name (bounded by cancelGrace), cancels
// the task and says so, so no remote task runs on. The remote (hand-written, both wire versions) counts
// its tasks still running: a task lives from the moment its request is read until a CancelTask for it.
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type HostileRemote, startHostileRemote, type WireVersion } from './fixtures/hostile-remote.js'
import { fakeParent, provider, request, until, within } from './helpers.js'

const BOUND = 15_000

interface SlowRemote extends HostileRemote {
  /** Tasks created and not cancelled. */
  running(): string[]
  /** Every CancelTask, by task id. */
  cancels: string[]
}

/** A remote whose executor takes `delay` ms (Infinity: for ever) to name the task it already holds. */
async function slowToName(version: WireVersion, streaming: boolean, delay: number): Promise<SlowRemote> {
  const running = new Set<string>()
  const cancels: string[] = []
  const streams = new Map<string, (event: unknown) => boolean>()
  let tasks = 0
  const remote = await startHostileRemote({
    version, streaming,
    handler: async (rpc, res, t) => {
      if (rpc.call === 'stream' || rpc.call === 'send') {
        const id = `t-${++tasks}`
        running.add(id)
        const event = rpc.call === 'stream' ? t.sse(res) : undefined
        // Keep-alive comments meanwhile (they name nothing).
        const keepAlive = event && setInterval(() => res.write(': keep-alive\n\n'), 20)
        res.once('close', () => clearInterval(keepAlive))
        if (delay === Infinity) return
        await sleep(delay)
        clearInterval(keepAlive)
        if (res.destroyed) return
        if (!event) return t.answer(res, version === '1.0' ? t.task(id, 'working') : t.taskBody(id, 'working'))
        event(t.task(id, 'working'))
        streams.set(id, event)
        res.once('close', () => streams.delete(id))
        return
      }
      const id = String(rpc.params.id)
      if (rpc.call === 'cancel') {
        cancels.push(id)
        running.delete(id)
        streams.get(id)?.(t.statusUpdate(id, 'canceled'))
        return t.answer(res, t.taskBody(id, 'canceled'))
      }
      if (rpc.call === 'get') return t.answer(res, t.taskBody(id, running.has(id) ? 'working' : 'canceled'))
      t.error(res, -32601, 'no such method')
    },
  })
  return Object.assign(remote, { running: () => [...running], cancels })
}

const MODES = [
  { version: '1.0' as const, streaming: true }, { version: '1.0' as const, streaming: false },
  { version: '0.3' as const, streaming: true }, { version: '0.3' as const, streaming: false },
]

for (const { version, streaming } of MODES) {
  describe(`provider-a2a: abort or stop before the remote names its task (A2A ${version}, ${streaming ? 'streaming' : 'send + polls'})`, function () {
    this.timeout(40_000)
    const remotes: HostileRemote[] = []
    afterEach(async () => {
      await Promise.all(remotes.splice(0).map((remote) => remote.close()))
    })
    async function serve(delay: number): Promise<SlowRemote> {
      const remote = await slowToName(version, streaming, delay)
      remotes.push(remote)
      return remote
    }
    const took = (remote: HostileRemote) => remote.calls.some((call) => call.call === 'stream' || call.call === 'send')

    it('the parent aborting: the start waits for the task id, cancels the task, rejects ABORTED saying it was cancelled', async () => {
      const remote = await serve(300)
      const a2a = await provider(remote.url, { cancelGrace: 5_000 })
      const controller = new AbortController()
      const starting = a2a.start(request({ prompt: 'wait', signal: controller.signal })).then(() => undefined, (error) => error)
      await until(() => took(remote), 'the remote took the task')
      controller.abort()
      const error = await within(starting, BOUND, 'start after the abort')
      expect(error).to.include({ code: 'ABORTED' })
      expect(error.message).to.match(/aborted while the remote agent .* was accepting the task; task t-1 was created there and then cancelled \(CancelTask\)/)
      expect(remote.cancels).to.deep.equal(['t-1'])
      expect(remote.running(), 'remote tasks still running').to.deep.equal([])
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('the provider stopping: its dispose waits for the task id and cancels the task; the start rejects ABORTED saying so', async () => {
      const remote = await serve(300)
      const a2a = await provider(remote.url, { cancelGrace: 5_000 })
      const starting = a2a.start(request({ prompt: 'wait' })).then(() => undefined, (error) => error)
      await until(() => took(remote), 'the remote took the task')
      await within(a2a.dispose(), BOUND, 'provider dispose')
      expect(remote.cancels, 'CancelTask before the dispose settled').to.deep.equal(['t-1'])
      expect(remote.running(), 'remote tasks still running').to.deep.equal([])
      const error = await within(starting, BOUND, 'start after the stop')
      expect(error).to.include({ code: 'ABORTED' })
      expect(error.message).to.match(/The provider was stopped while the remote agent .* was accepting the task; task t-1 was created there and then cancelled/)
    })

    it('no task named within cancelGrace after the abort: the request is closed, the start rejects ABORTED naming the bound', async () => {
      const remote = await serve(Infinity)
      const a2a = await provider(remote.url, { requestTimeout: 60_000, cancelGrace: 300 })
      const controller = new AbortController()
      const starting = a2a.start(request({ prompt: 'wait', signal: controller.signal })).then(() => undefined, (error) => error)
      await until(() => took(remote), 'the remote took the task')
      controller.abort()
      const error = await within(starting, BOUND, 'start after the abort')
      expect(error).to.include({ code: 'ABORTED' })
      expect(error.message).to.match(/no answer naming the task came within 300 ms \(cancelGrace\) after the abort\); no task id came back to cancel/)
      await until(() => remote.openAnswers() === 0, `answers still open on the remote: ${remote.openAnswers()}`)
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('a sweep of abort times around the late first answer: no remote task is left running, each cancelled once', async () => {
      const remote = await serve(150)
      const a2a = await provider(remote.url, { cancelGrace: 5_000 })
      for (const after of [0, 10, 40, 80, 120, 150, 170, 220, 300]) {
        const controller = new AbortController()
        const started = a2a.start(request({ prompt: 'wait', signal: controller.signal }))
        const calls = remote.calls.length
        await until(() => remote.calls.length > calls, 'the remote took the task')
        // The point is when the abort lands relative to the remote's answer: a swept delay, not a margin.
        await sleep(after)
        controller.abort()
        const run = await within(started.then((handed) => handed, () => undefined), BOUND, `start (abort after ${after} ms)`)
        // Handed over before the abort: the abort is the caller's cancel, as the service makes it.
        if (run) {
          run.cancel('aborted')
          await within(run.result, BOUND, 'result')
          await within(run.dispose(), BOUND, 'dispose')
        }
        expect(remote.running(), `remote tasks still running (abort after ${after} ms)`).to.deep.equal([])
      }
      expect(new Set(remote.cancels).size).to.equal(remote.cancels.length)
      expect(remote.cancels).to.have.length(9)
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })
  })
}

describe('provider-a2a through the service: a delegation aborted before the remote names its task', function () {
  this.timeout(30_000)

  it('the remote task is cancelled (the audit repro: it ran on for ever), and nothing is left in the service', async () => {
    const remote = await slowToName('1.0', true, 300)
    const ctx = new Context()
    ctx.plugin(SubagentService)
    const fork = ctx.plugin(a2aPlugin, { name: 'remote', url: remote.url, cancelGrace: 5_000 } as a2aPlugin.Config)
    await ctx.start()
    try {
      await within(ctx.subagents.ready('remote'), BOUND, 'the provider')
      const controller = new AbortController()
      const handle = ctx.subagents.delegate('remote', { prompt: 'wait', parent: fakeParent(), signal: controller.signal }).then(() => undefined, (e) => e)
      await until(() => remote.calls.some((call) => call.call === 'stream'), 'the remote took the task')
      controller.abort(new Error('parent aborted'))
      expect(await within(handle, BOUND, 'delegate')).to.include({ code: 'ABORTED' })
      await until(() => remote.cancels.length === 1 && remote.running().length === 0, `remote tasks still running: ${remote.running()}`)

      // A second one, then the plugin unloaded while the remote has not named the task.
      const second = ctx.subagents.delegate('remote', { prompt: 'wait', parent: fakeParent(), signal: new AbortController().signal }).then(() => undefined, (e) => e)
      await until(() => remote.calls.filter((call) => call.call === 'stream').length === 2, 'the remote took the second task')
      fork.dispose()
      expect(await within(second, BOUND, 'second delegate')).to.be.instanceOf(Error)
      await until(() => remote.cancels.length === 2 && remote.running().length === 0, `remote tasks still running: ${remote.running()}`)
      expect(ctx.subagents.runs()).to.have.length(0)
    } finally {
      await within(ctx.stop(), BOUND, 'ctx.stop()')
      await remote.close()
    }
  })
})
