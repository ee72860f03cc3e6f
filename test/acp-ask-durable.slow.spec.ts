// Issue 30 over ACP with durable state: a child parked on an escalated permission request is
// recorded in ctx.checkpoints (SQLite); a second host start on the same file (the first one gone,
// its agent process with it) continues it by run id through provider-acp's restore (session/load),
// and the answer reaches the agent as a prompt. Real service, journal, SQLite and fixture agent.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import { serviceOf } from '../packages/checkpoints/tests/support.js'
import { assertNoLeftovers, FAST, fixtureArgs, isAlive, until } from '../packages/provider-acp/tests/helpers.js'
import { type Host, startHost } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

describe('ACP child parked on a permission across a host restart (ctx.checkpoints on SQLite)', function () {
  this.timeout(60_000)
  let dir: string
  let state: string
  const hosts: Host[] = []

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'acp-durable-'))
    state = join(dir, 'sessions')
    rmSync(state, { recursive: true, force: true })
    mkdirSync(state)
  })
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.stop()
    rmSync(dir, { recursive: true, force: true })
    // Agent processes are stopped after the hand-back (provider-acp's fast hand-back): wait, bounded, for the reaping.
    await until(() => AcpProvider.liveProcessGroups().length === 0, 'every agent process reaped', 15_000).catch(() => {})
    assertNoLeftovers()
  })

  async function durableHost(): Promise<Host> {
    const host = await startHost({
      before(ctx: Context) {
        ctx.plugin(Database as never)
        ctx.plugin(SQLiteDriver, { path: join(dir, 'runs.db') })
        ctx.plugin(Checkpoints, { host: 'acp-durable-test' })
        ctx.plugin(AcpProvider, {
          ...FAST, command: process.execPath, args: fixtureArgs('sessions'), permission: 'escalate',
          env: { ...FAST.env, ACP_FIXTURE_STATE: state },
        })
      },
    })
    hosts.push(host)
    await serviceOf(host.ctx, 'checkpoints')
    await host.ctx.lifecycle.flush()
    return host
  }

  it('parks, the host stops, a new host lists it as pending and resume("allow") restores and completes it', async () => {
    const first = await durableHost()
    const owner = first.ctx.agents.create()
    const handle = await first.ctx.subagents.delegate('acp', { prompt: 'ask', parent: owner, signal: new AbortController().signal })
    const parked = await handle.result
    expect(parked.stopReason, parked.diagnostic).to.equal('pending')
    const runId = handle.id
    await waitFor(async () => (await first.ctx.checkpoints.questions.pending({ runId })).length === 1, 'the question stored')
    // The host goes away, and its agent process with it (the exit safety net's SIGKILL, here by hand).
    const groups = AcpProvider.liveProcessGroups()
    await first.stop()
    hosts.splice(0)
    for (const group of groups) process.kill(-group, 'SIGKILL')
    await until(() => groups.every((group) => !isAlive(group)), 'the first host\'s agent process gone')

    const second = await durableHost()
    await waitFor(() => second.ctx.subagents.pending().some((run) => run.runId === runId), 'the stored parked run listed')
    const listed = second.ctx.subagents.pending()
    expect(listed.map((entry) => entry.runId)).to.deep.equal([runId])
    expect(listed[0]!.question.id).to.equal(parked.question!.id)
    const outcome = await second.ctx.subagents.resume(runId, 'allow')
    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    expect(outcome.output).to.match(/^got: Before your process was restarted you asked permission for a tool call \(Delete build\/\).*"Allow" \(allow_once\)/)
  })
})
