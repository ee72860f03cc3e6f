/// <reference types="mocha" />
import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import { call, caller, type Harness, INPUT, loadProvider, loadTool, ProviderControl, setup, timerCount, until } from './helpers.js'

describe('subagent-tool: a wide step', () => {
  let h: Harness
  let spawn: ProviderControl
  let timersBefore: number

  beforeEach(async () => {
    timersBefore = timerCount()
    h = await setup({ subagents: { maxConcurrentPerParent: 100 } })
    spawn = new ProviderControl()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
  })

  // Counted at the start of the hook, before mocha arms the hook's own timeout timer (as in execute.spec).
  afterEach(async function () {
    const pass = this.currentTest?.state === 'passed'
    if (pass) expect(timerCount(), 'timers left by the calls').to.equal(timersBefore)
    await h.stop()
  })

  it('N calls on one turn signal add one abort listener and one timer, and all cancel with it', async () => {
    const N = 60
    const controller = new AbortController()
    const agent = caller()
    const results = [call(h.ctx, INPUT, { signal: controller.signal, agent })]
    await until(() => spawn.starts.length === 1)
    const timersWithOne = timerCount()
    for (let i = 1; i < N; i++) results.push(call(h.ctx, INPUT, { signal: controller.signal, agent }))
    await until(() => spawn.starts.length === N)
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(1)
    // The load's timeouts share one timer: N calls hold no more timers than one.
    expect(timerCount()).to.equal(timersWithOne)
    controller.abort()
    for (const result of await Promise.all(results)) {
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
    }
    expect(spawn.cancelCalls).to.equal(N)
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(0)
  })

  it('calls that finish one by one take their listener share and timeout with them', async () => {
    const controller = new AbortController()
    const agent = caller()
    const results = Array.from({ length: 10 }, () => call(h.ctx, INPUT, { signal: controller.signal, agent }))
    await until(() => spawn.starts.length === 10)
    for (const run of spawn.runs) run.complete('done')
    for (const result of await Promise.all(results)) expect(result).to.include({ content: 'done' })
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(0)
  })
})
