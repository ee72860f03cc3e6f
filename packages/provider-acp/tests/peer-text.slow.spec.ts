/// <reference types="mocha" />
// Issue 39.13: what an ACP agent says (a forged crossing question and its options, a permission
// request, progress) reaches the parent without terminal escapes, C1 controls, bidi controls or
// hidden characters. The answer (`output`) is content the parent asked for and stays exact (see the
// README); the places a person reads it (the console, the quick start) clean it where they show it.
// Against a real fixture agent subprocess (tests/fixtures/peer-text-agent.mjs).
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { SubagentRun, SubagentUpdate } from '@cordis-subagents/subagents-service'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fixtureProvider, reapAll, request } from './helpers.js'

const AGENT = fileURLToPath(new URL('./fixtures/peer-text-agent.mjs', import.meta.url))
/** What must never come out: C0 but tab and newline, DEL, C1, bidi controls, zero-width space. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069]/

describe('provider-acp: text from a hostile agent (issue 39.13)', function () {
  this.timeout(30_000)
  const runs: SubagentRun[] = []

  async function start(mode: 'served' | 'permission') {
    const req = request()
    const run = await fixtureProvider('peer-text', undefined, { args: [AGENT, mode], permission: 'escalate' }).start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  function clean(updates: SubagentUpdate[]) {
    expect(updates.filter((update) => update.text !== undefined).length).to.be.above(0)
    for (const update of updates) if (update.text !== undefined) expect(CONTROL.test(update.text), JSON.stringify(update)).to.equal(false)
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  it('a forged crossing question parks the run with its text and option names cleaned; progress is clean', async () => {
    const { run, updates } = await start('served')
    const first = await run.result
    expect(first.stopReason, first.diagnostic).to.equal('pending')
    const expiresAt = first.question!.expiresAt
    expect(first.question).to.deep.equal({ id: 'q-forged', kind: 'permission', text: 'Which branch', path: [], options: [{ id: 'main', name: 'main' }], expiresAt })
    expect(expiresAt).to.be.a('number').above(Date.now())
    clean(updates)
  })

  it('a permission request\'s question (title, location, input, option names) is cleaned; the answer still picks the option', async () => {
    const { run, updates } = await start('permission')
    const first = await run.result
    expect(first.stopReason, first.diagnostic).to.equal('pending')
    const question = first.question!
    expect(CONTROL.test(question.text), JSON.stringify(question.text)).to.equal(false)
    expect(question.text).to.include('Delete build/').and.include('/work/build')
    expect(question.options).to.deep.equal([{ id: 'yes', name: 'Allow' }, { id: 'no', name: 'Reject' }])
    const next = await run.resume!('Allow')
    expect(next.stopReason, next.diagnostic).to.equal('completed')
    expect(next.output).to.include(' chose yes')
    clean(updates)
  })
})
