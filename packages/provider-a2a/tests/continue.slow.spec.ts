// Issue 38, item 10: a finished A2A child continued through the service (`ctx.subagents.continue`):
// the follow-up is a new task in the earlier task's context, on the same agent host, under the same run id.
import { expect } from 'chai'
import { Context } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as a2aPlugin from '../src/index.js'
import { type ScriptedServer, startScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, RUN_MODES, within } from './helpers.js'

const BOUND = 10_000

for (const mode of RUN_MODES) {
  describe(`provider-a2a: continuing a finished run (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'}, ${mode.binding})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer
    let ctx: Context

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
      ctx = new Context()
      ctx.plugin(SubagentService)
      ctx.plugin(a2aPlugin, { name: 'remote', url: server.url, pollInterval: 50 } as a2aPlugin.Config)
      await ctx.start()
      await within(ctx.subagents.ready('remote'), BOUND, 'the provider')
    })
    afterEach(async () => {
      await within(ctx.stop(), BOUND, 'ctx.stop()')
      await server.close()
    })

    it('a new task in the same context, under the same run id, with start/end events; only its parent finds it', async () => {
      const parent = fakeParent()
      const ends: Array<[string, string]> = []
      ctx.on('subagent/end', (info, outcome) => ends.push([info.runId, outcome.stopReason]))
      const first = await within(ctx.subagents.delegate('remote', { prompt: 'complete', parent, signal: new AbortController().signal }), BOUND, 'delegate')
      expect(await within(first.result, BOUND, 'result')).to.include({ stopReason: 'completed', output: 'the answer' })
      await within(first.dispose(), BOUND, 'dispose')

      const stranger = { ...fakeParent(), id: 'parent-2' } as typeof parent
      const refused = await ctx.subagents.continue(first.id, 'complete again', { parent: stranger }).catch((error: { code?: string }) => error.code)
      expect(refused).to.equal('NOT_FOUND')

      const next = await within(ctx.subagents.continue(first.id, 'complete again', { parent }), BOUND, 'continue')
      expect(next.id).to.equal(first.id)
      expect(next.childId, 'a new task').to.not.equal(first.childId)
      expect(await within(next.result, BOUND, 'result')).to.include({ stopReason: 'completed', output: 'the answer' })
      await within(next.dispose(), BOUND, 'dispose')

      expect(server.sends).to.have.length(2)
      expect(server.sends[0].contextId).to.be.a('string').and.not.equal('')
      expect(server.sends[1].contextId, 'the follow-up runs in the first task\'s context').to.equal(server.sends[0].contextId)
      expect(server.sends[1].followUp, 'a new task: the first one ended').to.equal(undefined)
      expect(ends).to.deep.equal([[first.id, 'completed'], [first.id, 'completed']])
      expect(server.running()).to.equal(0)
    })
  })
}
