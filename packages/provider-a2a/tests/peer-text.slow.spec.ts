// Issue 39.13: a remote's question (its status text and a forged crossing question with options),
// its progress updates and its answer reach the parent without terminal escapes, C1 controls, bidi
// controls or hidden characters. Against the scripted servers (A2A 1.0 and 0.3) on 127.0.0.1.
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import { startScriptedServer, type ScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { provider, request, RUN_MODES, within } from './helpers.js'

const BOUND = 10_000
/** What must never come out: C0 but tab and newline, DEL, C1, bidi controls, zero-width space. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069]/

for (const mode of [RUN_MODES[0]!, RUN_MODES[1]!, RUN_MODES[3]!]) {
  describe(`provider-a2a: text from a hostile remote (issue 39.13; A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'polled'})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer
    const runs: SubagentRun[] = []

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
    })
    afterEach(async () => {
      await Promise.all(runs.splice(0).map((run) => within(run.dispose(), BOUND, 'dispose')))
      await server.close()
    })

    async function run(prompt: string) {
      const remote = await provider(server.url)
      const built = request({ prompt })
      const started = await within(remote.start(built), BOUND, 'start')
      runs.push(started)
      return { result: await within(started.result, BOUND, 'result'), updates: built.updates }
    }

    it('the question (text and option names) and the progress updates come out clean', async () => {
      const { result, updates } = await run('hostile-ask')
      expect(result.stopReason, result.diagnostic).to.equal('pending')
      expect(result.question).to.deep.include({ kind: 'input-required', text: 'Which file' })
      // The 0.3 server puts the crossing question in the status message's metadata (the 1.0 one on the event).
      if (mode.version === '0.3') expect(result.question).to.deep.include({ id: 'q-hostile', options: [{ id: 'a', name: 'first' }] })
      expect(updates.length).to.be.above(0)
      for (const update of updates) {
        if (update.text !== undefined) expect(CONTROL.test(update.text), JSON.stringify(update.text)).to.equal(false)
      }
      if (mode.streaming) expect(updates).to.deep.include({ kind: 'text', text: 'step' })
    })

    it('the answer (artifact text) comes out clean', async () => {
      const { result } = await run('hostile-answer')
      expect(result).to.include({ stopReason: 'completed', output: 'the answer' })
    })
  })
}
