/// <reference types="mocha" />
// Where one agent message ends (the output rule, README "Result"), with fixture agents that send no
// messageId, as Codex's and Claude Code's adapters do. Issue 40: a boundary must not depend on an update
// that may or may not come between two chunks.
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, hostileProvider, reapAll, request } from './helpers.js'

describe('provider-acp: message boundaries without messageId', function () {
  this.timeout(30_000)
  const runs: SubagentRun[] = []

  async function start(mode: string) {
    const req = request()
    const run = await hostileProvider(mode).start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  it('session-state updates (commands, mode, config options, session info) inside a message do not split it', async () => {
    const { run, updates } = await start('session-updates')
    expect((await run.result).output).to.equal('FINAL ANSWER')
    expect(updates.filter((update) => update.kind === 'text').map((update) => update.text)).to.deep.equal(['FINAL ', 'ANS', 'WER'])
  })

  it('the client advertises session notices: a warning sent as a notice is progress, never part of the output', async () => {
    const { run, updates } = await start('warning-first')
    expect((await run.result).output).to.equal('FINAL ANSWER')
    expect(updates).to.deep.include({ kind: 'status', text: 'warning: Model metadata for `fake-model` not found. Using fallback metadata.' })
  })
})
