// The provider unloaded while a run is parked (its remote task input-required): the task is cancelled
// and the service is told the run ended (`onIdleEnd`, as the parked timeout does), so it leaves
// runs' pending list, emits subagent/end and takes no answer any more. Scripted SDK servers, both versions.
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService, { type SubagentOutcome } from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, provider, request, RUN_MODES, until, within } from './helpers.js'

const BOUND = 10_000

for (const mode of RUN_MODES.filter((each) => each.binding === 'JSONRPC')) {
  describe(`provider-a2a: unloaded while a run is parked (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
    })
    afterEach(() => server.close())

    it('through the service: the run ends aborted (subagent/end, out of pending()), its task cancelled; resume is refused', async () => {
      const ctx = new Context()
      ctx.plugin(SubagentService)
      const fork = ctx.plugin(a2aPlugin, { name: 'remote', url: server.url, pollInterval: 50, cancelGrace: 2_000 } as a2aPlugin.Config)
      await ctx.start()
      try {
        await within(ctx.subagents.ready('remote'), BOUND, 'the provider')
        const ends: SubagentOutcome[] = []
        ctx.on('subagent/end', (_info, outcome) => ends.push(outcome))
        const run = await within(ctx.subagents.delegate('remote', { prompt: 'input', parent: fakeParent(), signal: new AbortController().signal }), BOUND, 'delegate')
        expect(await within(run.result, BOUND, 'first result')).to.include({ stopReason: 'pending' })
        expect(ctx.subagents.pending()).to.have.length(1)

        fork.dispose()
        await until(() => ends.length === 1, 'subagent/end after the provider unloaded')
        expect(ends[0]).to.include({ stopReason: 'aborted' })
        expect(ends[0].diagnostic).to.match(/The provider was stopped while the remote task \S+ waited for an answer \(question \S+\); CancelTask was sent for it/)
        expect(run.state).to.equal('ended')
        expect(ctx.subagents.pending()).to.have.length(0)
        expect(server.cancelRequests).to.have.length(1)
        expect(await ctx.subagents.resume(run.id, 'the README').catch((error: { code?: string }) => error.code)).to.equal('NOT_PARKED')
        await within(run.dispose(), BOUND, 'dispose')
        expect(ctx.subagents.runs()).to.have.length(0)
      } finally {
        await within(ctx.stop(), BOUND, 'ctx.stop()')
      }
    })

    it('the provider alone: dispose reports onIdleEnd once (aborted) for a parked run, never for one disposed by its holder', async () => {
      const a2a = await provider(server.url)
      const stopped = request({ prompt: 'input' })
      const idleEnds: Array<{ stopReason: string }> = []
      stopped.onIdleEnd = (result) => idleEnds.push(result)
      const run = await within(a2a.start(stopped), BOUND, 'start')
      expect(await within(run.result, BOUND, 'first result')).to.include({ stopReason: 'pending' })

      const held = request({ prompt: 'input' })
      const heldEnds: unknown[] = []
      held.onIdleEnd = (result) => heldEnds.push(result)
      const other = await within(a2a.start(held), BOUND, 'start')
      expect(await within(other.result, BOUND, 'first result')).to.include({ stopReason: 'pending' })
      await within(other.dispose(), BOUND, 'holder dispose')

      await within(a2a.dispose(), BOUND, 'provider dispose')
      expect(idleEnds).to.have.length(1)
      expect(idleEnds[0]).to.include({ stopReason: 'aborted' })
      expect(heldEnds, 'the holder disposed it: it knows, no idle end').to.have.length(0)
      await within(run.dispose(), BOUND, 'dispose')
      expect(idleEnds).to.have.length(1)
    })
  })
}
