/// <reference types="mocha" />
import { expect } from 'chai'
import { z } from 'zod'
import { ScriptedModel } from '@cordis-subagents/agent'
import type { ToolResult } from '@cordis-subagents/tools'
import { unhandledRejectionsDuring, within } from '@cordis-subagents/test-support'
import { startTeamHost } from '../../../test/support/team-host.js'
import { captureLogs } from '../../../test/support/logs.js'
import { eventually } from '../../../test/support/async.js'
import { call, caller, deferred, type Harness, INPUT, isSettled, loadProvider, loadTool, ProviderControl, setup } from './helpers.js'

// A cancelled call waits for its run's dispose a grace at most (src/cancelled-dispose.ts): a dispose that waits for
// a child's tool ignoring its abort must not hang the call, and finishes (slots and all) in the background.

const HANG_BOUND = 10_000

describe('subagent-tool: a cancelled call does not wait for a stuck dispose', function () {
  this.timeout(4 * HANG_BOUND)

  it('spawn child whose tool ignores its abort: the timed-out call returns, the run goes once the tool settles', async () => {
    const logs = captureLogs()
    const host = await startTeamHost({}, [{ provider: 'spawn', timeout: 500 }])
    const release = deferred<ToolResult>()
    let toolSignal: AbortSignal | undefined
    try {
      const { ctx } = host
      ctx.tools.register({
        name: 'stuck', description: 'never returns until the test lets it', input: z.strictObject({}),
        // Ignores its abort on purpose: provider-spawn's dispose waits for it.
        execute: (_input, exec) => { toolSignal = exec.signal; return release.promise },
      })
      ctx.agents.registerModel('m', new ScriptedModel((request) => request.messages.some((message) => message.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ id: 't1', name: 'stuck', input: {} }] }))
      await ctx.lifecycle.flush()
      const parent = ctx.agents.create({ model: 'm', label: 'parent' })

      const rejections = await unhandledRejectionsDuring(async () => {
        const result = await within(call(ctx, INPUT, { agent: parent }), HANG_BOUND, 'the timed-out call')
        expect(result.isError).to.equal(true)
        expect(result.content).to.match(/^Subagent timed out after 500 ms and was cancelled\./)
        expect(result.metadata).to.include({ stopReason: 'timeout' })
        expect(toolSignal?.aborted).to.equal(true)
        // The dispose still waits for the tool: the run (and its slots) is held until it ends.
        expect(ctx.subagents.runs()).to.have.length(1)
        expect(logs.records.some((record) => record.name === 'subagent-tool' && record.type === 'warn'
          && record.content.includes('did not end within'))).to.equal(true)

        release.resolve({ content: 'late' })
        await eventually(() => ctx.subagents.runs().length === 0, 'the run left ctx.subagents once its tool settled', HANG_BOUND)
      })
      expect(rejections).to.deep.equal([])
    } finally {
      release.resolve({ content: 'late' })
      await host.stop()
      logs.restore()
    }
  })

  describe('with a provider whose dispose the test holds', () => {
    let h: Harness
    let spawn: ProviderControl

    beforeEach(async () => {
      h = await setup()
      spawn = new ProviderControl()
      await loadProvider(h.ctx, spawn, { name: 'spawn' })
    })

    afterEach(async () => {
      for (const run of spawn.runs) run.disposeGate?.resolve()
      await h.stop()
    })

    it('a dispose that fails after the grace is logged, never an unhandled rejection', async () => {
      await loadTool(h.ctx, { provider: 'spawn', timeout: 100 })
      const gate = deferred<void>()
      spawn.onRun = (run) => {
        run.settleOnCancel = true
        run.disposeGate = gate
        run.disposeError = new Error('could not stop the child')
      }
      const rejections = await unhandledRejectionsDuring(async () => {
        const result = await within(call(h.ctx, INPUT), HANG_BOUND, 'the timed-out call')
        expect(result.content).to.match(/^Subagent timed out after 100 ms and was cancelled\./)
        expect(result.content).not.to.contain('could not stop the child')
        gate.resolve()
        await eventually(() => h.toolLogs('warn').some((record) => record.content.includes('could not stop the child')),
          'the late dispose failure was logged', HANG_BOUND)
        await eventually(() => h.ctx.subagents.runs().length === 0, 'the run left ctx.subagents', HANG_BOUND)
      })
      expect(rejections).to.deep.equal([])
    })

    // Cancelled while it waits: the outcome was in (and the call not cancelled) when the run's dispose began, and the
    // provider's dispose never ends. The cancel bounds that wait by the grace from then on; the answer is the result.
    const heldDispose = (gate = deferred<void>()) => {
      spawn.onRun = (run) => {
        run.disposeGate = gate
        run.complete('the answer')
      }
      return gate
    }
    const gaveUpOnDispose = () => h.toolLogs('warn').some((record) => record.content.includes('did not end within'))

    it('a completed run whose dispose hangs: the timeout during that wait returns its answer, the dispose goes on', async () => {
      await loadTool(h.ctx, { provider: 'spawn', timeout: 200 })
      const gate = heldDispose()
      const rejections = await unhandledRejectionsDuring(async () => {
        const result = await within(call(h.ctx, INPUT), HANG_BOUND, 'the call timed out while its dispose hung')
        expect(result.isError).to.equal(undefined)
        expect(result.content).to.equal('the answer')
        expect(result.metadata).to.include({ stopReason: 'completed', status: 'done' })
        expect(spawn.last.disposeCalls).to.equal(1)
        // As the service leaves it: the run (and its slots) is held until the provider's dispose ends.
        expect(h.ctx.subagents.runs()).to.have.length(1)
        expect(gaveUpOnDispose()).to.equal(true)
        gate.resolve()
        await eventually(() => h.ctx.subagents.runs().length === 0, 'the run left ctx.subagents once its dispose ended', HANG_BOUND)
      })
      expect(rejections).to.deep.equal([])
    })

    it('a completed run whose dispose hangs: the parent\'s abort during that wait returns its answer (no timeout)', async () => {
      await loadTool(h.ctx, { provider: 'spawn', timeout: 0 })
      const gate = heldDispose()
      const parent = new AbortController()
      const rejections = await unhandledRejectionsDuring(async () => {
        const pending = call(h.ctx, INPUT, { signal: parent.signal })
        await eventually(() => spawn.last?.disposeCalls === 1, 'the call began to dispose its completed run', HANG_BOUND)
        parent.abort()
        const result = await within(pending, HANG_BOUND, 'the call aborted while its dispose hung')
        expect(result.isError).to.equal(undefined)
        expect(result.content).to.equal('the answer')
        expect(h.ctx.subagents.runs()).to.have.length(1)
        expect(gaveUpOnDispose()).to.equal(true)
        gate.resolve()
        await eventually(() => h.ctx.subagents.runs().length === 0, 'the run left ctx.subagents once its dispose ended', HANG_BOUND)
      })
      expect(rejections).to.deep.equal([])
    })

    it('not cancelled: the call waits for its dispose; a reattached call (its dispose over at once) answers meanwhile', async () => {
      await loadTool(h.ctx, { provider: 'spawn', timeout: 0, reattach: true })
      const gate = heldDispose()
      const parent = caller()
      const owner = call(h.ctx, INPUT, { agent: parent })
      await eventually(() => spawn.last?.disposeCalls === 1, 'the owner began to dispose its completed run', HANG_BOUND)
      // The same task again: the service hands the ended run over as an attached handle, whose dispose is a no-op.
      const attached = await within(call(h.ctx, INPUT, { agent: parent }), HANG_BOUND, 'the reattached call')
      expect(attached.content).to.equal('the answer')
      expect(spawn.starts).to.have.length(1)
      expect(await isSettled(owner)).to.equal(false)
      gate.resolve()
      const result = await within(owner, HANG_BOUND, 'the owner once its dispose ended')
      expect(result.content).to.equal('the answer')
      expect(gaveUpOnDispose()).to.equal(false)
    })

    it('a dispose that fails within the grace is still reported in the result', async () => {
      await loadTool(h.ctx, { provider: 'spawn', timeout: 100 })
      spawn.onRun = (run) => {
        run.settleOnCancel = true
        run.disposeError = new Error('could not stop the child')
      }
      const result = await within(call(h.ctx, INPUT), HANG_BOUND, 'the timed-out call')
      expect(result.content).to.match(/^Subagent timed out after 100 ms and was cancelled\./)
      expect(result.content).to.contain('cleanup also failed: ').and.to.contain('could not stop the child')
      expect(h.toolLogs('warn')).to.deep.equal([])
    })
  })
})
