// A reload of the provider plugin (a config edit) or its removal during a run does not break the run
// (the design, §6 and §7): runs already handed over keep going under their holder, who ends them.
// Through the service, against the scripted servers built from the SDK's own server classes (A2A 1.0
// and 0.3, streamed and polled): a running task completes after the reload with the remote's answer;
// a parked one is answered after the reload and completes; a run whose plugin was removed is ended by
// its holder's dispose (CancelTask; the leak audit checks that nothing it held is left open).
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'chai'
import { Context, type ForkScope } from 'cordis'
import SubagentService, { type SubagentRun } from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, RUN_MODES, until, within } from './helpers.js'

const BOUND = 10_000
/** How long nothing may happen to the run after the reload (the old code cancelled it at once). */
const WINDOW = 300

for (const mode of RUN_MODES) {
  describe(`provider-a2a: a reload or removal during a run (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'}, ${mode.binding})`, function () {
    this.timeout(30_000)
    let server: ScriptedServer
    let ctx: Context
    let fork: ForkScope
    const runs: SubagentRun[] = []
    const config = (extra: Partial<a2aPlugin.Config> = {}) => ({ name: 'remote', url: server.url, pollInterval: 50, cancelGrace: 2_000, ...extra }) as a2aPlugin.Config

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
      ctx = new Context()
      ctx.plugin(SubagentService)
      fork = ctx.plugin(a2aPlugin, config())
      await ctx.start()
      await within(ctx.subagents.ready('remote'), BOUND, 'the provider')
    })
    afterEach(async () => {
      await Promise.all(runs.splice(0).map((run) => within(run.dispose(), BOUND, 'dispose')))
      await within(ctx.stop(), BOUND, 'ctx.stop()')
      await server.close()
    })

    async function delegate(prompt: string): Promise<SubagentRun> {
      const run = await within(ctx.subagents.delegate('remote', { prompt, parent: fakeParent(), signal: new AbortController().signal }), BOUND, 'delegate')
      runs.push(run)
      return run
    }

    /** Edits the plugin's config (a reload: the old load is disposed, a new one registered). */
    async function reload() {
      const before = ctx.subagents.get('remote')
      fork.update(config({ cancelGrace: 1_500 }))
      await ctx.lifecycle.flush()
      const after = await within(ctx.subagents.ready('remote'), BOUND, 'the reloaded provider')
      expect(after, 'a new load registered').to.not.equal(before)
    }

    it('a running task: the run goes on under its holder and completes with the remote\'s answer; no CancelTask', async () => {
      const run = await delegate('hold')
      await until(() => server.running() === 1, 'the remote execution started')
      await reload()
      // The reloaded provider takes new tasks meanwhile.
      const other = await delegate('complete')
      expect(await within(other.result, BOUND, 'the new load\'s result')).to.include({ stopReason: 'completed', output: 'the answer' })
      // The point: nothing happens to the run within a window after the reload (the old code cancelled it at once).
      await sleep(WINDOW)
      expect(server.cancelRequests, 'CancelTask after the reload').to.deep.equal([])
      expect(server.running(), 'the remote task still runs').to.equal(1)
      expect(ctx.subagents.runs().map((each) => each.runId)).to.include(run.id)

      server.release()
      const result = await within(run.result, BOUND, 'the result')
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(result.output).to.equal('the held answer')
      // Streamed: its stream went on over the connection the run kept, never read back by GetTask as a broken one is.
      if (mode.streaming) expect(server.getRequests, 'GetTask: the stream was cut').to.not.include(run.childId)
      await within(run.dispose(), BOUND, 'dispose')
      expect(server.cancelRequests).to.deep.equal([])
      expect(ctx.subagents.runs().map((each) => each.runId)).to.not.include(run.id)
    })

    it('a parked task (input-required): it stays parked through the reload; the answer given after it completes the run', async () => {
      const run = await delegate('input')
      expect(await within(run.result, BOUND, 'the question')).to.include({ stopReason: 'pending' })
      await until(() => server.running() === 0, 'the remote execution returned')
      await reload()
      await sleep(WINDOW)
      expect(server.cancelRequests, 'CancelTask after the reload').to.deep.equal([])
      expect(ctx.subagents.pending().map((each) => each.runId)).to.deep.equal([run.id])

      const next = await within(ctx.subagents.resume(run.id, 'notes.txt'), BOUND, 'resume after the reload')
      expect(next.stopReason, next.diagnostic).to.equal('completed')
      expect(next.output).to.equal('answered: notes.txt')
      expect(server.sends.map((send) => send.followUp?.taskId)).to.deep.equal([undefined, run.childId])
      await within(run.dispose(), BOUND, 'dispose')
      expect(server.cancelRequests).to.deep.equal([])
    })

    it('the plugin removed during a run: the run goes on; its holder\'s dispose cancels the task and closes what it held', async () => {
      const run = await delegate('hold')
      await until(() => server.running() === 1, 'the remote execution started')
      fork.dispose()
      await ctx.lifecycle.flush()
      expect(ctx.subagents.get('remote')).to.equal(undefined)
      await sleep(WINDOW)
      expect(server.cancelRequests, 'CancelTask after the removal').to.deep.equal([])
      expect(server.running()).to.equal(1)

      await within(run.dispose(), BOUND, 'dispose')
      expect(server.cancelRequests).to.deep.equal([run.childId])
      const result = await within(run.result, BOUND, 'the result')
      expect(result.stopReason, result.diagnostic).to.equal('aborted')
      await until(() => server.running() === 0, 'the remote execution ended')
    })
  })
}
