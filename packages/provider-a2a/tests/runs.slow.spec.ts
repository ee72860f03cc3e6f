// Runs against a server built from the SDK's own server classes (scripted executor) on 127.0.0.1:
// every task state (input-required and auth-required: ask.slow.spec.ts), progress, output, cancel
// mid-stream, the server going away, what crosses the wire.
import { expect } from 'chai'
import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { startScriptedServer, type ScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, provider, request, RUN_MODES, until, within } from './helpers.js'

const BOUND = 10_000

for (const mode of RUN_MODES) {
  describe(`provider-a2a runs (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'}, ${mode.binding})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
    })
    afterEach(() => server.close())

    async function run(prompt: string, overrides = {}): Promise<{ result: SubagentResult; childId?: string; updates: ReturnType<typeof request>['updates'] }> {
      const remote = await provider(server.url)
      const built = request({ prompt, ...overrides })
      const handle = await within(remote.start(built), BOUND, 'start')
      const result = await within(handle.result, BOUND, 'result')
      await within(handle.dispose(), BOUND, 'dispose')
      return { result, childId: handle.childId, updates: built.updates }
    }

    it('completed → completed, the output from the artifacts, the task id as childId, status texts as updates', async () => {
      const { result, childId, updates } = await run('complete')
      expect(result.stopReason).to.equal('completed')
      expect(result.output).to.equal('the answer')
      expect(result.diagnostic).to.equal(undefined)
      expect(childId).to.match(/^[0-9a-f-]{36}$/)
      // A stream shows every status; polls show the states they happen to see (here at least the last).
      expect(updates).to.deep.include(mode.streaming ? { kind: 'status', text: 'working on: complete' } : { kind: 'status', text: 'done' })
      expect(server.running()).to.equal(0)
    })

    it('a Message answer (no task) → completed with its text', async () => {
      const { result } = await run('message')
      expect(result).to.include({ stopReason: 'completed', output: 'a direct answer' })
    })

    const states: Array<[string, string, RegExp]> = [
      ['fail', 'error', /^The remote task failed\. It said: "it broke: the disk is full" \(task [0-9a-f-]+\)$/],
      ['reject', 'error', /^The remote agent rejected the task\. It said: "I do not do that kind of task"/],
      ['self-cancel', 'aborted', /The remote task was canceled\. It said: "I gave up"/],
      ['unknown', 'error', /ended in an unknown state \(unrecognized\)\. It said: "a state from the future"/],
      ['budget', 'budget', /The remote task failed\. It said: "the budget maxSteps \(1\) was reached"/],
    ]
    for (const [prompt, stopReason, diagnostic] of states) {
      it(`${prompt} → ${stopReason}, with the agent's words in the diagnostic`, async () => {
        const { result } = await run(prompt)
        expect(result.stopReason, result.diagnostic).to.equal(stopReason)
        expect(result.diagnostic, result.diagnostic).to.match(diagnostic)
      })
    }

    it('usage a remote of ours reports in metadata.cordisSubagents comes back as the run\'s usage', async () => {
      const { result } = await run('budget')
      expect(result.usage).to.deep.equal({ inputTokens: 7, outputTokens: 3 })
    })

    it('appended artifact chunks join into one output', async () => {
      const { result } = await run('stream 5')
      expect(result.output).to.equal('chunk 0;chunk 1;chunk 2;chunk 3;chunk 4;')
    })

    it('an output over maxOutputBytes is cut and the diagnostic says so', async () => {
      const remote = await provider(server.url, { maxOutputBytes: 1000 })
      const handle = await remote.start(request({ prompt: 'big 5000' }))
      const result = await within(handle.result, BOUND, 'result')
      await handle.dispose()
      expect(result.stopReason).to.equal('completed')
      expect(result.output).to.have.length(1000)
      expect(result.diagnostic).to.match(/cut at 1000 bytes \(maxOutputBytes\)/)
    })

    it('cancel mid-task sends CancelTask: the remote task ends canceled, the run aborted, nothing left running', async () => {
      const remote = await provider(server.url)
      const handle = await remote.start(request({ prompt: 'wait' }))
      await until(() => server.running() === 1, 'the remote execution started')
      handle.cancel('the user pressed stop')
      const result = await within(handle.result, BOUND, 'result')
      await handle.dispose()
      expect(result.stopReason).to.equal('aborted')
      expect(result.output).to.equal('partial work')
      expect(server.cancels).to.deep.equal([handle.childId])
      await until(() => server.running() === 0, 'the remote execution ended')
    })

    it('dispose of a working run cancels the remote task first', async () => {
      const remote = await provider(server.url)
      const handle = await remote.start(request({ prompt: 'wait' }))
      await within(handle.dispose(), BOUND, 'dispose')
      expect(server.cancels).to.deep.equal([handle.childId])
      expect((await handle.result).stopReason).to.equal('aborted')
      await until(() => server.running() === 0, 'the remote execution ended')
    })

    it('the server going away mid-task ends the run as an error naming the task, at once (no hang)', async () => {
      const remote = await provider(server.url, { requestTimeout: 1_000, idleTimeout: 2_000 })
      const handle = await remote.start(request({ prompt: 'wait' }))
      await until(() => server.running() === 1, 'the remote execution started')
      await server.kill()
      const result = await within(handle.result, BOUND, 'result after the server went away')
      await within(handle.dispose(), BOUND, 'dispose')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic, result.diagnostic).to.match(new RegExp(`Lost the remote task ${handle.childId} of "scripted agent" at http://127\\.0\\.0\\.1:\\d+ \\(last state (working|submitted)\\): ${mode.streaming ? '' : 'no poll was answered for 2000 ms \\(idleTimeout\\)'}`))
    })

    if (!mode.streaming) {
      // The 1.0 SDK server marks the task failed when its executor throws; the 0.3 one leaves it working.
      const ends = mode.version === '1.0'
        ? 'The remote task failed\\. It said: "Agent execution error: the executor crashed"'
        : 'Lost the remote task [0-9a-f-]+ .*: the task showed no progress for 500 ms \\(stuckTimeout\\): still working, no new status, message or artifact; its executor has likely failed'
      it(`issue 26.7: an executor that throws ends the run as an error (${mode.version === '1.0' ? 'failed' : 'stuck: no progress for stuckTimeout'})`, async () => {
        const remote = await provider(server.url, { stuckTimeout: 500, idleTimeout: 60_000 })
        const handle = await within(remote.start(request({ prompt: 'throw' })), BOUND, 'start')
        const result = await within(handle.result, BOUND, 'result')
        await within(handle.dispose(), BOUND, 'dispose')
        expect(result.stopReason).to.equal('error')
        expect(result.diagnostic, result.diagnostic).to.match(new RegExp(ends))
      })
    }

    it('carries depth, the ceiling, the remaining budget, the tool ceiling and trace context in metadata.cordisSubagents', async () => {
      const remote = await provider(server.url)
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
      const left = { maxSteps: 5, maxTokens: 1000.7, maxToolCalls: Infinity, maxWallMs: 60_000, maxChildren: 2, maxConcurrent: 3 }
      const budget = { remaining: () => left }
      const handle = await remote.start(request({
        prompt: 'complete', depth: 2, maxDepthCeiling: 3, parent: fakeParent(1, ['read_file', 'list_files', 'bad name!']),
        budget: budget as never, traceContext: { traceparent, tracestate: 'vendor=1' },
      }))
      await handle.result
      await handle.dispose()
      expect(server.sends).to.have.length(1)
      expect(server.sends[0].metadata).to.deep.equal({
        cordisSubagents: {
          depth: 2, maxDepth: 3,
          budget: { maxSteps: 5, maxTokens: 1000, maxWallMs: 60_000, maxChildren: 2 },
          allowedTools: ['list_files', 'read_file'],
          traceparent, tracestate: 'vendor=1',
        },
      })
      // Trace context also travels as the W3C HTTP headers, for instrumented servers.
      expect(server.sends[0].headers.traceparent).to.equal(traceparent)
      expect(server.sends[0].headers.tracestate).to.equal('vendor=1')
    })
  })
}

describe('provider-a2a: auth headers from the environment', function () {
  this.timeout(20_000)
  let server: ScriptedServer
  beforeEach(async () => {
    server = await startScriptedServer({ streaming: true })
  })
  afterEach(() => server.close())

  it('sends bearerTokenEnv and headersFromEnv on every request and keeps their values out of diagnostics', async () => {
    const env = { REMOTE_TOKEN: 'tok-very-secret-value-123', REMOTE_KEY: 'key-other-secret-456' }
    const remote = await provider(server.url, { env, bearerTokenEnv: 'REMOTE_TOKEN', headersFromEnv: { 'X-Api-Key': 'REMOTE_KEY' } })
    const handle = await remote.start(request({ prompt: 'complete' }))
    expect((await handle.result).stopReason).to.equal('completed')
    await handle.dispose()
    expect(server.sends[0].headers.authorization).to.equal('Bearer tok-very-secret-value-123')
    expect(server.sends[0].headers['x-api-key']).to.equal('key-other-secret-456')
  })

  it('sends bearerToken from config on every request; it excludes bearerTokenEnv and is never in an error', async () => {
    const remote = await provider(server.url, { bearerToken: 'tok-from-config-789' })
    const handle = await remote.start(request({ prompt: 'complete' }))
    expect((await handle.result).stopReason).to.equal('completed')
    await handle.dispose()
    expect(server.sends[0].headers.authorization).to.equal('Bearer tok-from-config-789')
    const both = await provider(server.url, { env: { REMOTE_TOKEN: 'x' }, bearerToken: 'tok-from-config-789', bearerTokenEnv: 'REMOTE_TOKEN' }).then(() => undefined, (e) => e)
    expect(both).to.include({ code: 'A2A_INVALID_CONFIG' })
    expect(both.message).to.match(/bearerToken and bearerTokenEnv are both set/)
    const broken = await provider(server.url, { bearerToken: 'tok-secret\r\nX-Evil: 1' }).then(() => undefined, (e) => e)
    expect(broken.message).to.match(/bearerToken is empty or holds a line break/).and.not.include('tok-secret')
  })

  it('a variable that is not set fails the load, naming the variable (not a value)', async () => {
    const error = await provider(server.url, { env: {}, bearerTokenEnv: 'REMOTE_TOKEN' }).then(() => undefined, (e) => e)
    expect(error).to.include({ code: 'A2A_INVALID_CONFIG' })
    expect(error.message).to.match(/bearerTokenEnv names the environment variable REMOTE_TOKEN, which is not set/)
  })
})
