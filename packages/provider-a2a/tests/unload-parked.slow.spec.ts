// The provider unloaded while a run is parked (its remote task input-required): the run is its
// holder's, so it stays parked (the service keeps it in pending(), no subagent/end, no CancelTask)
// and its answer still goes through; its holder's dispose cancels a task still waiting. The
// provider stops new starts. Scripted SDK servers, both versions. (Before, the unload cancelled
// the task and ended the run `aborted` through onIdleEnd; the design says a provider's removal
// stops new starts only.)
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService, { type SubagentOutcome } from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, provider, request, RUN_MODES, until, within } from './helpers.js'

const BOUND = 10_000
/** How long nothing may happen to the parked run after the unload. */
const WINDOW = 300

for (const mode of RUN_MODES.filter((each) => each.binding === 'JSONRPC')) {
  describe(`provider-a2a: unloaded while a run is parked (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
    })
    afterEach(() => server.close())

    it('through the service: the run stays parked (pending(), no subagent/end, no CancelTask); the answer completes it', async () => {
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
        await ctx.lifecycle.flush()
        expect(ctx.subagents.get('remote')).to.equal(undefined)
        // The point: nothing happens to the parked run within a window after the unload.
        await sleep(WINDOW)
        expect(ends, 'subagent/end after the unload').to.deep.equal([])
        expect(ctx.subagents.pending()).to.have.length(1)
        expect(server.cancelRequests).to.deep.equal([])

        const next = await within(ctx.subagents.resume(run.id, 'the README'), BOUND, 'resume after the unload')
        expect(next).to.include({ stopReason: 'completed', output: 'answered: the README' })
        expect(ends.map((end) => end.stopReason)).to.deep.equal(['completed'])
        expect(ctx.subagents.pending()).to.have.length(0)
        await within(run.dispose(), BOUND, 'dispose')
        expect(server.cancelRequests).to.deep.equal([])
        expect(ctx.subagents.runs()).to.have.length(0)
      } finally {
        await within(ctx.stop(), BOUND, 'ctx.stop()')
      }
    })

    it('the provider alone: dispose leaves parked runs alone (no onIdleEnd, no CancelTask); their holders answer or dispose them', async () => {
      const a2a = await provider(server.url)
      const answered = request({ prompt: 'input' })
      const idleEnds: unknown[] = []
      answered.onIdleEnd = (result) => idleEnds.push(result)
      const run = await within(a2a.start(answered), BOUND, 'start')
      expect(await within(run.result, BOUND, 'first result')).to.include({ stopReason: 'pending' })
      const held = request({ prompt: 'input' })
      held.onIdleEnd = (result) => idleEnds.push(result)
      const other = await within(a2a.start(held), BOUND, 'start')
      expect(await within(other.result, BOUND, 'first result')).to.include({ stopReason: 'pending' })

      await within(a2a.dispose(), BOUND, 'provider dispose')
      expect(idleEnds, 'the provider ends no handed-over run').to.have.length(0)
      expect(server.cancelRequests).to.deep.equal([])
      // No new start, restore or follow-up on the disposed provider; nothing is sent.
      const refused = await within(a2a.start(request({ prompt: 'complete' })).then(() => undefined, (error) => error), BOUND, 'start after dispose')
      expect(refused).to.include({ code: 'ABORTED' })
      expect(refused.message).to.match(/was disposed \(its plugin was reloaded, removed or stopped\) and starts no new task; nothing was sent/)
      expect(server.sends).to.have.length(2)

      // Answered after the provider's dispose: the answer goes over the connections the run kept.
      expect(await within(run.resume!('notes.txt'), BOUND, 'resume')).to.include({ stopReason: 'completed', output: 'answered: notes.txt' })
      const followUp = await within(run.continueWith!('more', request()).then(() => undefined, (error) => error), BOUND, 'continue after dispose')
      expect(followUp).to.include({ code: 'ABORTED' })
      expect(followUp.message).to.match(/takes no follow-up of its runs/)
      await within(run.dispose(), BOUND, 'dispose')
      // Disposed by its holder while parked: its task is cancelled.
      await within(other.dispose(), BOUND, 'holder dispose')
      expect(server.cancelRequests).to.deep.equal([other.childId])
      expect(idleEnds).to.have.length(0)
      expect(server.sends).to.have.length(3)
      await until(() => server.running() === 0, 'the remote executions ended')
    })
  })
}
