// Issue 38, item 5: after a restart, the re-run task call (reattach by task key, same parent id,
// provider and prompt) of a spawn child that was mid-turn when its host went away wakes the child
// (a new turn continuing its transcript) instead of handing back an idle run that nobody wakes.
// A real SQLite file; the first host loses its store before it stops, so the run stays `running`
// in the store as a killed host leaves it (a clean stop's own records are not what this is about).
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ForkScope } from 'cordis'
import { ScriptedModel } from '@cordis-subagents/agent'
import { CONTINUE_AFTER_RESTART } from '../packages/subagents-service/src/durable/reattach-wake.js'
import type { Host } from './support/host.js'
import { durableSpawnHost, lastUser } from './support/durable-spawn-host.js'
import { waitFor } from './support/host-process-wait.js'


describe('reattach after a restart wakes an interrupted child (no idle run that nobody wakes)', function () {
  this.timeout(30_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'reattach-interrupted-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const durableHost = (file: string, model: ScriptedModel, stores: ForkScope[] = []) =>
    durableSpawnHost({ file, hostName: 'reattach-test', model, hosts, stores })

  it('the re-run task call gets the woken turn\'s result; the child is restored, never started twice', async () => {
    const file = join(dir, 'interrupted.db')
    const model = new ScriptedModel((request) => lastUser(request) === CONTINUE_AFTER_RESTART
      ? { text: 'finished after the restart' }
      : { toolCalls: [{ name: 'block', input: {} }] })
    const task = { prompt: 'Summarise the logs.', agentOptions: { model: 'child' }, reattach: true, signal: new AbortController().signal }

    const stores: ForkScope[] = []
    const first = await durableHost(file, model, stores)
    const parent = first.ctx.agents.create({ label: 'lead' })
    const handle = await first.ctx.subagents.delegate('spawn', { ...task, parent })
    await waitFor(async () => (await first.ctx.checkpoints.load(handle.id))?.state === 'running', 'the run recorded running')
    // The store goes first, as with a killed host: nothing after this point is recorded.
    stores[0].dispose()
    await first.stop()

    const second = await durableHost(file, model)
    expect(second.ctx.checkpoints.interruptedAtStart).to.equal(1)
    let starts = 0
    second.ctx.on('subagent/start', () => { starts++ })
    const again = second.ctx.agents.create({ label: 'lead' })
    expect(again.id).to.equal(parent.id)
    const reattached = await second.ctx.subagents.delegate('spawn', { ...task, parent: again })
    const outcome = await reattached.result
    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    expect(outcome.output).to.equal('finished after the restart')
    expect(reattached.state).to.equal('ended')
    expect(starts).to.equal(1)
    expect(lastUser(model.requests.at(-1)!)).to.equal(CONTINUE_AFTER_RESTART)
    await reattached.dispose()
    await waitFor(async () => (await second.ctx.checkpoints.load(reattached.id))?.state === 'settled', 'the woken run settled in the store')
    expect((await second.ctx.checkpoints.load(handle.id))!.state).to.equal('closed')
  })
})
