// The quick start's ACP agent under provider-acp's opt-in pool: a warm spare, a reused process
// (several sessions in one process) and a parent's child session continued on its second
// delegation; every process is gone once the host stops.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import * as acp from '@cordis-subagents/provider-acp'
import { ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { alive, buildQuickstart, eventually } from './helpers.js'
import { startQuickstartAcpHost } from './support/quickstart-acp-host.js'

describe('quick start ACP agent with warm spares, reuse and resume', function () {
  this.timeout(30_000)
  let ctx: Context
  let state: string

  before(() => buildQuickstart())

  beforeEach(async () => {
    state = mkdtempSync(join(tmpdir(), 'quickstart-warm-'))
    ctx = await startQuickstartAcpHost({ acp: { env: { QUICKSTART_STATE_DIR: state }, warm: true, reuse: true, resume: 'per-parent' } })
  })

  afterEach(async () => {
    await ctx?.stop()
    rmSync(state, { recursive: true, force: true })
  })

  async function delegate(parent: ReturnType<Context['agents']['create']>) {
    const statuses: string[] = []
    const run = await ctx.subagents.delegate('acp', {
      prompt: `${ROOT_PROMPT}.`, parent, signal: new AbortController().signal,
      onUpdate: (update: SubagentUpdate) => { if (update.kind === 'status') statuses.push(update.text ?? '') },
    })
    const childId = run.info.childId!
    const result = await run.result
    await run.dispose()
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    return { childId, statuses, pid: Number(/^session-(\d+)-/.exec(childId)?.[1]) }
  }

  it('the tree\'s remaining budget reaches a pooled process per session (_meta), not through its environment', async () => {
    const parent = ctx.agents.create()
    // A process for this environment exists (and is reused) before the limited delegation comes.
    await delegate(parent)
    const run = await ctx.subagents.delegate('acp', {
      prompt: `${ROOT_PROMPT}.`, parent, signal: new AbortController().signal, budget: { maxSteps: 1 },
    })
    const result = await run.result
    await run.dispose()
    // The demo model needs a tool step before it answers: one step is not enough.
    expect(result.stopReason).to.equal('error')
    expect(result.diagnostic).to.match(/max-steps|steps/i)
    const after = await delegate(parent)
    expect(after.statuses[0]).to.be.oneOf(['reused process', 'warm process'])
  })

  it('a parent\'s second delegation continues its session on the reused process; another parent gets a new session; stop reaps all', async () => {
    const parent = ctx.agents.create()
    const first = await delegate(parent)
    expect(first.statuses).to.deep.equal(['cold process'])
    const second = await delegate(parent)
    expect(second.statuses).to.deep.equal(['reused process', 'resumed session'])
    expect(second.childId).to.equal(first.childId)
    // The stored session holds both turns: the second run continued the first's history.
    const stored = JSON.parse(readFileSync(join(state, `${first.childId}.json`), 'utf8')) as { messages: Array<{ role: string }> }
    expect(stored.messages.filter((message) => message.role === 'user')).to.have.length(2)

    const other = await delegate(ctx.agents.create())
    expect(other.childId).to.not.equal(first.childId)
    expect(other.statuses[0]).to.be.oneOf(['reused process', 'warm process'])
    // One stored session per parent holds their turns. A warm spare opens its session ahead (provider-acp
    // README, Warm spares), and this agent stores a session when it is opened: the spare started after
    // the last hand-back may have stored one no run has taken yet, empty (at most `spares`, 1 here).
    const sessions = readdirSync(state).map((file) => ({
      file, users: (JSON.parse(readFileSync(join(state, file), 'utf8')) as { messages: Array<{ role: string }> }).messages.filter((m) => m.role === 'user').length,
    }))
    expect(sessions.filter((s) => s.users > 0).map((s) => s.file)).to.have.members([`${first.childId}.json`, `${other.childId}.json`])
    expect(sessions.filter((s) => s.users === 0)).to.have.length.at.most(1)

    await ctx.stop()
    expect(await eventually(() => !alive(first.pid)), `agent process ${first.pid} still alive after ctx.stop()`).to.equal(true)
    // Spares and pooled processes stop with the plugin (the dispose is not awaited by ctx.stop()).
    expect(await eventually(() => acp.liveProcessGroups().length === 0), `agent process groups left: ${acp.liveProcessGroups()}`).to.equal(true)
  })
})
