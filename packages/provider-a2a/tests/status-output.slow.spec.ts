// A status text is not output: an A2A agent (serve-a2a among them) publishes progress ("calls <tool>")
// and why a task ended ("Aborted: cancelled by the client (CancelTask)") as status messages. A run
// whose task did not complete keeps only its artifacts as output; a failure's status text goes into the
// diagnostic. A completed task that answers only in its final status message still returns that answer.
import { expect } from 'chai'
import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { startScriptedServer, type ScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { provider, request, RUN_MODES, until, within } from './helpers.js'

const BOUND = 10_000
const PROGRESS = { kind: 'status', text: 'calls read_file' }

for (const mode of RUN_MODES) {
  describe(`provider-a2a: status texts are never output (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'}, ${mode.binding})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
    })
    afterEach(() => server.close())

    /** Starts `prompt`; once its progress text was seen, `act` ends it; gives the result and the updates forwarded. */
    async function ended(prompt: string, act: (cancel: (reason: string) => void) => Promise<void> | void, options = {}) {
      const remote = await provider(server.url, options)
      const built = request({ prompt })
      const handle = await within(remote.start(built), BOUND, 'start')
      await until(() => server.running() === 1, 'the remote execution started')
      // A stream forwards every status text; polls see a few snapshots of the working task (its text repeats: not always an update).
      if (mode.streaming) await until(() => built.updates.some((update) => update.text === PROGRESS.text), 'the progress text arrived')
      else await new Promise((resolve) => setTimeout(resolve, 300))
      await act((reason) => handle.cancel(reason))
      const result = await within(handle.result, BOUND, 'result')
      await within(handle.dispose(), BOUND, 'dispose')
      return { result, updates: built.updates }
    }

    function noStatusOutput(result: SubagentResult) {
      expect(result.output, 'a status text presented as output').to.equal('')
      expect(result.diagnostic ?? '').not.to.include('calls read_file')
    }

    it('cancelled by us (a subagent tool\'s timeout): no output, the progress text stays an update', async () => {
      const { result, updates } = await ended('progress-wait', (cancel) => cancel('the subagent tool timed out'))
      expect(result.stopReason, result.diagnostic).to.equal('aborted')
      noStatusOutput(result)
      if (mode.streaming) expect(updates).to.deep.include(PROGRESS)
      await until(() => server.running() === 0, 'the remote execution ended')
    })

    it('ended by our own limit (idleTimeout / stuckTimeout): no output', async () => {
      const { result } = await ended('progress-wait', () => {}, { idleTimeout: 500, stuckTimeout: 500 })
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(/^Lost the remote task .*CancelTask was sent for it/)
      noStatusOutput(result)
    })

    it('its host gone mid-task: no output, the last progress text is not the answer', async () => {
      const { result } = await ended('progress-wait', () => server.crash(), { requestTimeout: 1_000, idleTimeout: 2_000 })
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(/^Lost the remote task /)
      noStatusOutput(result)
    })

    const finals: Array<[string, string, RegExp]> = [
      ['fail', 'error', /^The remote task failed\. It said: "it broke: the disk is full" \(task [0-9a-f-]+\)$/],
      ['reject', 'error', /^The remote agent rejected the task\. It said: "I do not do that kind of task"/],
      ['self-cancel', 'aborted', /^The remote task was canceled\. It said: "I gave up"/],
    ]
    for (const [prompt, stopReason, diagnostic] of finals) {
      it(`${prompt}: the final status text is in the diagnostic, not the output`, async () => {
        const remote = await provider(server.url)
        const handle = await within(remote.start(request({ prompt })), BOUND, 'start')
        const result = await within(handle.result, BOUND, 'result')
        await within(handle.dispose(), BOUND, 'dispose')
        expect(result.stopReason, result.diagnostic).to.equal(stopReason)
        expect(result.output).to.equal('')
        expect(result.diagnostic, result.diagnostic).to.match(diagnostic)
      })
    }

    it('a failure\'s status text is quoted in the diagnostic on one line, without escapes or hiding characters', async () => {
      const remote = await provider(server.url)
      const handle = await within(remote.start(request({ prompt: 'hostile-fail' })), BOUND, 'start')
      const result = await within(handle.result, BOUND, 'result')
      await within(handle.dispose(), BOUND, 'dispose')
      expect(result.output).to.equal('')
      expect(result.diagnostic, result.diagnostic).to.match(/It said: "it broke[^"]* line two"/)
      expect(result.diagnostic).not.to.match(/[\u0000-\u001f\u007f-\u009f\u200b\u202a-\u202e\u2066-\u2069]/)
    })

    it('guard: a completed task whose answer is only in its final status message returns it as output', async () => {
      const remote = await provider(server.url)
      const handle = await within(remote.start(request({ prompt: 'status-answer' })), BOUND, 'start')
      const result = await within(handle.result, BOUND, 'result')
      await within(handle.dispose(), BOUND, 'dispose')
      expect(result).to.include({ stopReason: 'completed', output: 'the answer, in the status' })
      expect(result.diagnostic).to.equal(undefined)
    })
  })
}
