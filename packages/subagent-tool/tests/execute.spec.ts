/// <reference types="mocha" />
import { expect } from 'chai'
import type { SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolUpdate } from '@cordis-subagents/tools'
import { runDelegation } from '../src/call.js'
import type { DelegateOptions, InFlight } from '../src/call-types.js'
import { capOutput, headline } from '../src/result.js'
import {
  call, caller, deferred, type Harness, INPUT, isSettled, loadProvider, loadTool, parentAgent, ProviderControl, setup,
  tick, timerCount, until,
} from './helpers.js'

const PARTIAL = 'Partial output (the subagent did not finish; treat this as incomplete):'

describe('subagent-tool: execute', () => {
  let h: Harness
  let spawn: ProviderControl
  let timersBefore: number

  async function mount(config: Record<string, unknown> = {}) {
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn', ...config })
  }

  // Counted synchronously at the start of each hook, before mocha arms the hook's own timeout timer.
  beforeEach(async () => {
    timersBefore = timerCount()
    h = await setup()
    spawn = new ProviderControl()
  })

  afterEach(async function () {
    const pass = this.currentTest?.state === 'passed'
    // Every path clears the tool's timeout timer: nothing the test started is still ticking.
    if (pass) expect(timerCount(), 'timers left by the call').to.equal(timersBefore)
    await h.stop()
  })

  describe('stop reasons', () => {
    it('completed → the output, with metadata and usage for roll-up', async () => {
      await mount()
      const usage = { inputTokens: 120, outputTokens: 30 }
      spawn.onRun = (run) => run.complete('The README describes a CLI.', { usage })
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(undefined)
      expect(result.content).to.equal('The README describes a CLI.')
      expect(result.usage).to.deep.equal(usage)
      const metadata = result.metadata as Record<string, unknown>
      expect(Object.keys(metadata).sort()).to.deep.equal(['childId', 'durationMs', 'provider', 'runId', 'status', 'stopReason', 'usage', 'work'])
      // The child tree's work as the service counted it; a scripted provider's child did none of it in-process.
      expect(metadata.work).to.deep.equal({ steps: 0, toolCalls: 0, delegations: 0 })
      expect(result.work).to.deep.equal({ steps: 0, toolCalls: 0, delegations: 0 })
      expect(metadata).to.deep.include({ provider: 'spawn', runId: spawn.starts[0].runId, childId: 'child-1', stopReason: 'completed', status: 'done', usage })
      expect(metadata.durationMs).to.be.a('number').and.to.be.at.least(0)
      expect(spawn.last.disposeCalls).to.equal(1)
      expect(spawn.last.cancels).to.deep.equal([])
    })

    it('completed without usage → no top-level usage key', async () => {
      await mount()
      spawn.onRun = (run) => run.complete('ok')
      const result = await call(h.ctx, INPUT)
      expect(result).to.not.have.property('usage')
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('completed with no final text → a success that says so', async () => {
      await mount()
      spawn.onRun = (run) => run.complete('  ')
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(undefined)
      expect(result.content).to.equal('(The subagent finished without a final message.)')
    })

    const failures: Array<[string, string]> = [
      ['aborted', 'Subagent was aborted before it finished.'],
      ['error', 'Subagent failed.'],
      ['max-tokens', 'Subagent ran out of output tokens before finishing.'],
      ['refusal', 'Subagent refused the task.'],
      ['max-steps', 'Subagent stopped: it used all the model calls of its turn (maxSteps) without a final answer. Answer with what you have, or delegate a narrower task.'],
    ]
    for (const [stopReason, head] of failures) {
      it(`${stopReason} → isError with headline, diagnostic and the partial output labelled`, async () => {
        await mount()
        const usage = { inputTokens: 5, outputTokens: 6 }
        spawn.onRun = (run) => run.finish({ stopReason, output: 'half done', diagnostic: `why: ${stopReason}`, usage })
        const result = await call(h.ctx, INPUT)
        expect(result.isError).to.equal(true)
        expect(result.content).to.equal(`${head}\n\nDiagnostic: why: ${stopReason}\n\n${PARTIAL}\nhalf done`)
        expect(result.usage).to.deep.equal(usage)
        expect(result.metadata).to.deep.include({ stopReason, provider: 'spawn' })
        expect(spawn.last.disposeCalls).to.equal(1)
      })

      it(`${stopReason} without output → 'No output was produced.'`, async () => {
        await mount()
        spawn.onRun = (run) => run.finish({ stopReason, output: '' })
        const result = await call(h.ctx, INPUT)
        expect(result.isError).to.equal(true)
        expect(result.content).to.equal(`${head}\n\nNo output was produced.`)
        expect(spawn.last.disposeCalls).to.equal(1)
      })
    }

    it('max-steps with the child\'s step limit → the headline names the limit, and the metadata carries it', async () => {
      await mount()
      spawn.onRun = (run) => run.finish({ stopReason: 'max-steps', stepLimit: 25, output: 'working', diagnostic: 'hit 25 steps' })
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent stopped: it used all 25 model calls of its turn \(maxSteps\) without a final answer\./)
      expect(result.metadata).to.deep.include({ stopReason: 'max-steps', stepLimit: 25 })
    })

    it('an unknown stop reason is a failure (the service reports it as malformed)', async () => {
      await mount()
      spawn.onRun = (run) => run.finish({ stopReason: 'weird', output: 'something' })
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent failed\./)
      expect(result.content).to.contain('unknown stop reason "weird"')
      expect(result.content).to.contain(`${PARTIAL}\nsomething`)
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('headline() names an unrecognised stop reason it is handed directly', () => {
      expect(headline({ stopReason: 'weird' as never, output: '' }, undefined, 1000))
        .to.equal('Subagent ended with an unrecognised stop reason "weird".')
    })

    it('a rejecting result promise → isError with the failure as diagnostic', async () => {
      await mount()
      spawn.onRun = (run) => run.outcome.reject(new Error('boom'))
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent failed\./)
      expect(result.content).to.contain('boom')
      expect(result.content).to.contain('No output was produced.')
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('dispose rejecting after a completed result → isError mentioning cleanup, output kept', async () => {
      await mount()
      spawn.onRun = (run) => {
        run.disposeError = new Error('could not kill the child')
        run.complete('the full answer', { usage: { inputTokens: 1, outputTokens: 2 } })
      }
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent finished but could not be cleaned up\./)
      expect(result.content).to.contain('could not kill the child')
      expect(result.content).to.contain('Output (the subagent finished; only its cleanup failed):\nthe full answer')
      expect(result.usage).to.deep.equal({ inputTokens: 1, outputTokens: 2 })
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('dispose rejecting after a failed result → both failures reported', async () => {
      await mount()
      spawn.onRun = (run) => {
        run.disposeError = new Error('stuck process')
        run.finish({ stopReason: 'error', output: '', diagnostic: 'model crashed' })
      }
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent failed\./)
      expect(result.content).to.contain('model crashed').and.to.contain('cleanup also failed').and.to.contain('stuck process')
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('a 3 MB output is truncated to maxOutputBytes (default 64 KiB) with a note, without splitting a character', async () => {
      await mount()
      const output = '€'.repeat(1024 * 1024) // 3 bytes each: 3 MiB
      spawn.onRun = (run) => run.complete(output)
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(undefined)
      const [kept, note] = result.content.split('\n\n[Output truncated')
      expect(kept).to.match(/^€+$/)
      expect(Buffer.byteLength(kept)).to.equal(64 * 1024 - 1) // 64 KiB is not a multiple of 3
      expect(kept).to.not.contain('\uFFFD')
      expect(note).to.contain(`${3 * 1024 * 1024} bytes`).and.to.contain(`first ${64 * 1024 - 1}`)
    })

    it('a maxOutputBytes above ctx.tools\' result cap is lowered under it (with room for the note), and says so', async () => {
      await mount({ maxOutputBytes: 4 * 1024 * 1024 })
      const cap = h.ctx.tools.maxResultBytes
      expect(h.toolLogs('info').map((record) => record.content).join('\n')).to.contain(`lowered to ${cap - 8 * 1024}`)
      spawn.onRun = (run) => run.complete('x'.repeat(2 * 1024 * 1024))
      const result = await call(h.ctx, INPUT)
      // Our note is intact: the registry did not cut it away.
      expect(result.content).to.match(new RegExp(`\\[Output truncated: the subagent returned ${2 * 1024 * 1024} bytes; the first ${cap - 8 * 1024} are shown\\.\\]$`))
    })

    it('maxOutputBytes also caps the partial output of a failure', async () => {
      await mount({ maxOutputBytes: 10 })
      spawn.onRun = (run) => run.finish({ stopReason: 'max-tokens', output: '😀😀😀😀😀' })
      const result = await call(h.ctx, INPUT)
      expect(result.content).to.contain(`${PARTIAL}\n😀😀\n\n[Output truncated: the subagent returned 20 bytes; the first 8 are shown.]`)
    })

    it('capOutput never splits a surrogate pair or a multi-byte character', () => {
      for (let max = 1; max <= 12; max++) {
        const cut = capOutput('a😀é€b', max)
        if (Buffer.byteLength('a😀é€b') <= max) continue
        const kept = cut.split('\n\n[Output truncated')[0]
        expect(kept).to.not.contain('\uFFFD')
        expect(Buffer.byteLength(kept)).to.be.at.most(max)
        expect('a😀é€b'.startsWith(kept)).to.equal(true)
      }
    })
  })

  describe('model input', () => {
    const bad: Array<[string, unknown, string]> = [
      ['missing description', { prompt: 'do it' }, 'description'],
      ['missing prompt', { description: 'label' }, 'prompt'],
      ['empty description', { description: '', prompt: 'do it' }, 'description'],
      ['empty prompt', { description: 'label', prompt: '' }, 'prompt'],
      ['whitespace description', { description: '   ', prompt: 'do it' }, 'description'],
      ['whitespace prompt', { description: 'label', prompt: ' \n\t ' }, 'prompt'],
      ['non-string description', { description: 42, prompt: 'do it' }, 'description'],
      ['non-string prompt', { description: 'label', prompt: { text: 'do it' } }, 'prompt'],
      ['null prompt', { description: 'label', prompt: null }, 'prompt'],
      ['description over 120 characters', { description: 'x'.repeat(121), prompt: 'do it' }, 'description'],
      ['an extra field', { description: 'label', prompt: 'do it', cwd: '/tmp' }, 'cwd'],
      ['no input at all', undefined, 'description'],
      ['a non-object input', 'do it', 'expected object'],
    ]
    for (const [what, input, field] of bad) {
      it(`${what} never reaches the provider; the error names \`${field}\``, async () => {
        await mount()
        const result = await call(h.ctx, input)
        expect(result.isError).to.equal(true)
        expect(result.content).to.contain('Invalid input for tool "subagent"').and.to.contain(field)
        expect(spawn.starts).to.have.length(0)
      })
    }

    it('a 120-character description is accepted; surrounding whitespace is trimmed from the label', async () => {
      await mount()
      spawn.onRun = (run) => run.complete()
      const label = 'y'.repeat(120)
      const result = await call(h.ctx, { description: `  ${label}  `, prompt: '  keep my spacing  ' })
      expect(result.isError).to.equal(undefined)
      expect(spawn.starts[0].label).to.equal(label)
      expect(spawn.starts[0].prompt).to.equal('  keep my spacing  ')
    })
  })

  describe('abort and timeout', () => {
    it('a pre-aborted signal: the provider is never called', async () => {
      await mount()
      const controller = new AbortController()
      controller.abort()
      const result = await call(h.ctx, INPUT, { signal: controller.signal })
      expect(result.isError).to.equal(true)
      expect(result.content).to.contain('aborted')
      expect(spawn.starts).to.have.length(0)
    })

    it('runDelegation() itself with a pre-aborted signal: cancelled headline, provider never called', async () => {
      await loadProvider(h.ctx, spawn, { name: 'spawn' })
      const controller = new AbortController()
      controller.abort()
      const inFlight = new Set<InFlight>()
      const options: DelegateOptions = { provider: 'spawn', timeout: 60_000, maxOutputBytes: 1000 }
      const result = await runDelegation(h.ctx.subagents as SubagentService, options, INPUT,
        { signal: controller.signal, agent: caller(), toolCallId: 'c1' }, inFlight)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
      expect(result.content).to.contain('ABORTED')
      expect(spawn.starts).to.have.length(0)
      expect(inFlight.size).to.equal(0)
    })

    it('runDelegation() whose onStarted hook throws: the started run is cancelled, then settled and disposed; one error result, nothing in flight', async () => {
      await loadProvider(h.ctx, spawn, { name: 'spawn' })
      spawn.onRun = () => {}
      const inFlight = new Set<InFlight>()
      const options: DelegateOptions = { provider: 'spawn', timeout: 60_000, maxOutputBytes: 1000 }
      const result = await runDelegation(h.ctx.subagents as SubagentService, options, INPUT,
        { signal: new AbortController().signal, agent: caller(), toolCallId: 'c1' }, inFlight, undefined,
        { onStarted: () => { throw new Error('the hook broke') } })
      expect(result.isError).to.equal(true)
      expect(result.content).to.include('the tool could not follow its run: the hook broke')
      expect(spawn.starts).to.have.length(1)
      expect(spawn.cancelCalls).to.equal(1)
      expect(spawn.disposeCalls).to.equal(1)
      expect(inFlight.size).to.equal(0)
      expect(h.ctx.subagents.runs()).to.deep.equal([])
    })

    it('runDelegation() with a service whose run result and dispose both reject: one error result keeping both failures', async () => {
      const inFlight = new Set<InFlight>()
      let disposals = 0
      // runDelegation starts its run through `begin` (delegate plus a cancel that works before the hand-over).
      const service = {
        begin: () => ({
          handle: Promise.resolve({
            id: 'run-1',
            childId: 'child-1',
            result: Promise.reject(new Error('the result exploded')),
            cancel() {},
            dispose: async () => { disposals++; throw new Error('the cleanup exploded') },
          }),
          cancel() {},
        }),
      } as unknown as SubagentService
      const options: DelegateOptions = { provider: 'spawn', timeout: 60_000, maxOutputBytes: 1000 }
      const result = await runDelegation(service, options, INPUT,
        { signal: new AbortController().signal, agent: caller(), toolCallId: 'c1' }, inFlight)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent failed\./)
      expect(result.content).to.contain('the result exploded').and.contain('the cleanup exploded')
      expect(result.content).to.contain('No output was produced.')
      expect(result.metadata).to.include({ runId: 'run-1', childId: 'child-1', stopReason: 'error' })
      expect(disposals).to.equal(1)
      expect(inFlight.size).to.equal(0)
    })

    it('abort during start: the call ends at once; the run handed over late is cancelled and disposed once', async () => {
      await mount()
      spawn.hold = deferred()
      const controller = new AbortController()
      const pending = call(h.ctx, INPUT, { signal: controller.signal })
      await until(() => spawn.starts.length === 1, 'the provider was called')
      controller.abort()
      const result = await pending
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
      expect(result.content).to.contain('ABORTED')
      spawn.hold.resolve()
      await until(() => spawn.runs.length === 1 && spawn.last.disposeCalls === 1, 'the late run was disposed')
      expect(spawn.last.cancels).to.have.length(1)
      await tick()
      expect(spawn.last.disposeCalls).to.equal(1)
      expect(h.ctx.subagents.runs()).to.deep.equal([])
    })

    it('abort during the run: the run is cancelled; the headline says the call was aborted', async () => {
      await mount()
      spawn.onRun = (run) => { run.partialOutput = 'got halfway' }
      const controller = new AbortController()
      const pending = call(h.ctx, INPUT, { signal: controller.signal })
      await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
      controller.abort()
      const result = await pending
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
      expect(result.content).to.contain(`${PARTIAL}\ngot halfway`)
      expect(result.metadata).to.deep.include({ stopReason: 'aborted' })
      expect(spawn.last.cancels).to.have.length(1)
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('abort of a real parent agent reaches the child run', async () => {
      await mount()
      const controller = new AbortController()
      const { agent } = parentAgent(h.ctx, [{ toolCalls: [{ id: 'c1', name: 'subagent', input: INPUT }] }])
      const running = agent.run('go', { signal: controller.signal })
      await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
      controller.abort()
      const run = await running
      expect(run.stopReason).to.equal('aborted')
      await agent.dispose()
      expect(spawn.last.cancels).to.have.length(1)
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('timeout: the run is cancelled after `timeout` ms and the headline says it timed out', async () => {
      await mount({ timeout: 50 })
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent timed out after 50 ms and was cancelled\./)
      expect(spawn.last.cancels).to.have.length(1)
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('timeout while the start waits for a slot: the call ends timed out, its provider start never happens', async () => {
      await h.stop()
      h = await setup({ subagents: { maxConcurrentPerParent: 1 } })
      await mount({ timeout: 0 })
      const parent = caller()
      const first = call(h.ctx, INPUT, { agent: parent })
      await until(() => spawn.starts.length === 1)
      // A second delegation of the same parent queues behind the first; its own timeout cancels it there.
      const inFlight = new Set<InFlight>()
      const options: DelegateOptions = { provider: 'spawn', timeout: 30, maxOutputBytes: 1000 }
      const queued = await runDelegation(h.ctx.subagents as SubagentService, options, INPUT,
        { signal: new AbortController().signal, agent: parent, toolCallId: 'c2' }, inFlight)
      expect(queued.isError).to.equal(true)
      expect(queued.content).to.match(/^Subagent timed out after 30 ms and was cancelled\./)
      expect(queued.content).to.contain('ABORTED').and.contain('waiting for a slot')
      expect(spawn.starts).to.have.length(1)
      expect(inFlight.size).to.equal(0)
      spawn.last.complete('first answer')
      expect((await first).content).to.equal('first answer')
    })

    it('unload while the start waits for a slot: the call gets the unload headline, its provider start never happens', async () => {
      await h.stop()
      h = await setup({ subagents: { maxConcurrentPerParent: 1 } })
      await mount({ timeout: 0 })
      const parent = caller()
      const first = call(h.ctx, INPUT, { agent: parent })
      await until(() => spawn.starts.length === 1)
      const inFlight = new Set<InFlight>()
      const options: DelegateOptions = { provider: 'spawn', timeout: 0, maxOutputBytes: 1000 }
      const queued = runDelegation(h.ctx.subagents as SubagentService, options, INPUT,
        { signal: new AbortController().signal, agent: parent, toolCallId: 'c2' }, inFlight)
      await tick()
      for (const each of inFlight) each.cancel('unload')
      const result = await queued
      expect(result.content).to.match(/^Subagent cancelled: the subagent tool was unloaded\./)
      expect(spawn.starts).to.have.length(1)
      spawn.last.complete('first answer')
      expect((await first).content).to.equal('first answer')
    })

    it('timeout: a provider that ignores cancel cannot hang the call', async () => {
      await mount({ timeout: 50 })
      spawn.onRun = (run) => { run.settleOnCancel = false }
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent timed out after 50 ms and was cancelled\./)
      expect(spawn.last.cancels).to.have.length(1)
      expect(spawn.last.disposeCalls).to.equal(1)
    })

    it('timeout: an `error` result after the timeout still says it timed out', async () => {
      await mount({ timeout: 50 })
      spawn.onRun = (run) => {
        run.settleOnCancel = false
        run.run.cancel = () => { run.cancels.push('x'); run.finish({ stopReason: 'error', output: '', diagnostic: 'killed' }) }
      }
      const result = await call(h.ctx, INPUT)
      expect(result.content).to.match(/^Subagent timed out after 50 ms and was cancelled\./)
      expect(result.content).to.contain('killed')
    })

    it('`timeout: 0` disables the timeout: no timer, and the run finishes when it finishes', async () => {
      await mount({ timeout: 0 })
      const base = timerCount() // includes mocha's own timer for this test
      const pending = call(h.ctx, INPUT)
      await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
      expect(timerCount()).to.equal(base)
      expect(await isSettled(pending)).to.equal(false)
      spawn.last.complete('no rush')
      expect((await pending).content).to.equal('no rush')
    })

    it('the default timeout arms one timer per call and clears it on success', async () => {
      await mount()
      const base = timerCount()
      const pending = call(h.ctx, INPUT)
      await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
      expect(timerCount()).to.equal(base + 1)
      spawn.last.complete('ok')
      await pending
      expect(timerCount()).to.equal(base)
    })

    it('the timer is cleared when the start fails', async () => {
      await mount()
      const base = timerCount()
      spawn.startError = new Error('no such binary')
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(timerCount()).to.equal(base)
    })
  })

  describe('start errors', () => {
    it('DEPTH_EXCEEDED via maxDepth → isError with the code and message; provider never called', async () => {
      await mount({ maxDepth: 1 })
      const result = await call(h.ctx, INPUT, { agent: caller(1) })
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Could not start the subagent\./)
      expect(result.content).to.contain('DEPTH_EXCEEDED').and.to.contain('depth 2').and.to.contain('maxDepth 1')
      expect(spawn.starts).to.have.length(0)
    })

    it('a call right after the provider vanished finds the tool unmounted in the same tick, and starts nothing', async () => {
      await loadTool(h.ctx, { provider: 'spawn' })
      const provider = await loadProvider(h.ctx, spawn, { name: 'spawn' })
      expect(h.ctx.tools.has('subagent')).to.equal(true)
      provider.dispose()
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Unknown tool "subagent"\./)
      expect(spawn.starts).to.have.length(0)
    })

    it('a provider start that throws → isError with PROVIDER_START_FAILED and the reason', async () => {
      await mount()
      spawn.startError = new Error('no such binary: claude')
      const result = await call(h.ctx, INPUT)
      expect(result.isError).to.equal(true)
      expect(result.content).to.contain('PROVIDER_START_FAILED').and.to.contain('no such binary: claude')
    })
  })

  describe('progress and concurrency', () => {
    it('provider onUpdate → exec.onUpdate receives { kind: "subagent", ... }', async () => {
      await mount()
      const updates: ToolUpdate[] = []
      const pending = call(h.ctx, INPUT, { onUpdate: (update) => updates.push(update) })
      await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
      spawn.last.request.onUpdate!({ kind: 'tool-call', text: 'reading README.md', tool: 'read' })
      spawn.last.request.onUpdate!({ kind: 'text', text: 'almost there' })
      spawn.last.complete('done')
      await pending
      expect(updates).to.deep.equal([
        { kind: 'subagent', text: 'reading README.md', data: { kind: 'tool-call', text: 'reading README.md', tool: 'read' } },
        { kind: 'subagent', text: 'almost there', data: { kind: 'text', text: 'almost there' } },
      ])
    })

    it('a throwing onUpdate sink does not break the delegation', async () => {
      await mount()
      const pending = call(h.ctx, INPUT, { onUpdate: () => { throw new Error('bad sink') } })
      await until(() => h.ctx.subagents.runs().length === 1, 'the run was handed over')
      spawn.last.request.onUpdate!({ kind: 'text', text: 'x' })
      spawn.last.complete('fine')
      expect((await pending).content).to.equal('fine')
    })

    it('progress reaches a real parent agent as tool-update events', async () => {
      await mount()
      spawn.onRun = (run) => {
        run.request.onUpdate!({ kind: 'status', text: 'thinking' })
        setImmediate(() => run.complete('child done'))
      }
      const { agent } = parentAgent(h.ctx, [
        { toolCalls: [{ id: 'c1', name: 'subagent', input: INPUT }] },
        { text: 'ok' },
      ])
      const events: unknown[] = []
      await agent.run('go', { onEvent: (event) => { if (event.type === 'tool-update') events.push(event) } })
      expect(events).to.deep.equal([{
        type: 'tool-update', step: 1, toolCallId: 'c1', name: 'subagent',
        update: { kind: 'subagent', text: 'thinking', data: { kind: 'status', text: 'thinking' } },
      }])
      await agent.dispose()
    })

    it('two sibling calls in one parent step run concurrently (each run waits until both have started)', async function () {
      this.timeout(5000) // a serialized implementation deadlocks here
      await mount()
      spawn.onRun = () => {
        if (spawn.runs.length === 2) {
          spawn.runs[0].complete('first', { usage: { inputTokens: 1, outputTokens: 1 } })
          spawn.runs[1].complete('second', { usage: { inputTokens: 2, outputTokens: 2 } })
        }
      }
      const { agent } = parentAgent(h.ctx, [
        { toolCalls: [
          { id: 'a', name: 'subagent', input: { description: 'first task', prompt: 'Do the first thing.' } },
          { id: 'b', name: 'subagent', input: { description: 'second task', prompt: 'Do the second thing.' } },
        ] },
        { text: 'both done' },
      ])
      const run = await agent.run('go')
      expect(run.stopReason).to.equal('completed')
      const results = agent.transcript.messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content])
      expect(results).to.deep.equal([['a', 'first'], ['b', 'second']])
      expect(spawn.starts.map((r) => r.label)).to.have.members(['first task', 'second task'])
      expect(agent.usage.delegated).to.deep.include({ inputTokens: 3, outputTokens: 3 })
      expect(spawn.disposeCalls).to.equal(2)
      await agent.dispose()
    })
  })
})
