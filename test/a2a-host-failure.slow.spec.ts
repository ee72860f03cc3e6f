// Host failure on a shared store (serve-a2a `shared` on PostgreSQL): real hosts as subprocesses on
// loopback, SIGKILLed with a task parked, idle or mid-turn. What a host's death may cost is the turn
// in flight: a waiting task goes on through any host, a mid-turn task becomes `interrupted` and
// any host runs that turn again on a new message, and an answer sent to another host than the
// owner is taken there, never refused. Every model call is logged per task, so nothing runs twice.
// The lease is long (10 min) on purpose: everything here happens well before any lease runs out,
// so what is seen comes from the hosts' database sessions ending, not from leases expiring.
import { expect } from 'chai'
import * as a2a from '@cordis-subagents/provider-a2a'
import { type Deployment, deployment, message } from './support/a2a-shared-hosts.js'
import { startHost } from './support/host.js'
import { eventually as until } from './support/async.js'

const LEASE_MS = 600_000

describe('serve-a2a shared: a host dies (SIGKILL) with a task parked, idle or mid-turn (real hosts, PostgreSQL)', function () {
  this.timeout(120_000)
  let d: Deployment

  beforeEach(async () => {
    d = await deployment(LEASE_MS)
  })

  afterEach(async () => {
    await d?.close()
  })

  it('parked: the owner dies while its task waits for an answer; the answer through another host finishes it there, the asking step not run again', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const parked = (await d.rpc(a, 'SendMessage', { message: message('[ask] paint the fence [job:p1]') })).result.task
    expect(parked.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    await a.kill()
    // A message the SDK refuses after it was claimed (its context id is wrong) gives the claim back.
    const refused = await d.rpc(b, 'SendMessage', { message: message('wrong context', { id: parked.id, contextId: 'another-context' }) })
    expect(refused.error?.message, JSON.stringify(refused)).to.match(/contextId mismatch/)
    const answered = await d.rpc(b, 'SendMessage', { message: message('red', parked) })
    expect(answered.result?.task?.status?.state, JSON.stringify(answered)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(answered.result.task.artifacts)).to.include('painted red')
    expect(d.calls('p1')).to.deep.equal(['host-a ask', 'host-b finish'])
    expect(await b.stats()).to.deep.equal({ parked: 0, running: 0 })
  })

  it('a waiting task of a dead host, and an interrupted one, are canceled through any host at once', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const parked = (await d.rpc(a, 'SendMessage', { message: message('[ask] paint the door [job:c1]') })).result.task
    const held = (await d.rpc(a, 'SendMessage', { message: message('[hold] idle then cancel [job:c2]'), configuration: { returnImmediately: true } })).result.task
    await until(() => d.calls('c2').length === 1, 'host-a works on the second task')
    await a.kill()
    await until(async () => (await d.rpc(b, 'GetTask', { id: held.id })).result.status.state === 'TASK_STATE_INPUT_REQUIRED', 'interrupted')
    for (const task of [parked, held]) {
      const canceled = await d.rpc(b, 'CancelTask', { id: task.id })
      expect(canceled.result?.status?.state, JSON.stringify(canceled)).to.equal('TASK_STATE_CANCELED')
      expect((await d.rpc(b, 'GetTask', { id: task.id })).result.status.state).to.equal('TASK_STATE_CANCELED')
    }
    expect(d.calls('c1')).to.deep.equal(['host-a ask'])
    expect(d.calls('c2')).to.deep.equal(['host-a hold'])
  })

  it('parked, then answered: the host running the answered turn dies in it; the next host runs that turn again with the same answer', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const parked = (await d.rpc(a, 'SendMessage', { message: message('[ask] paint the gate [job:p2]') })).result.task
    const answering = await d.rpc(b, 'SendMessage', { message: message('[hold] red', parked), configuration: { returnImmediately: true } })
    expect(answering.result?.task?.id, JSON.stringify(answering)).to.equal(parked.id)
    await until(() => d.calls('p2').length === 2, 'host-b runs the answered turn')
    await b.kill()
    await until(async () => (await d.rpc(a, 'GetTask', { id: parked.id })).result.status.state === 'TASK_STATE_INPUT_REQUIRED', 'interrupted')
    const done = await d.rpc(a, 'SendMessage', { message: message('quickly', parked) })
    expect(done.result?.task?.status?.state, JSON.stringify(done)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(done.result.task.artifacts)).to.include('painted [hold] red, then quickly')
    expect(d.calls('p2')).to.deep.equal(['host-a ask', 'host-b hold', 'host-a finish'])
  })

  it('mid-turn: any host sees the task interrupted as soon as its owner is gone; a message through any host runs the lost turn again there, once', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const c = await d.start('host-c')
    const task = (await d.rpc(a, 'SendMessage', { message: message('[hold] think [job:m1]'), configuration: { returnImmediately: true } })).result.task
    await until(() => d.calls('m1').length === 1, 'host-a works on the task')
    await a.kill()
    // Long before the lease: the dead host's database session ended, and with it its lock.
    const interrupted = await until(async () => {
      const got = (await d.rpc(b, 'GetTask', { id: task.id })).result
      return got.status.state === 'TASK_STATE_INPUT_REQUIRED' ? got : undefined
    }, 'GetTask on host-b shows the task interrupted', LEASE_MS / 10)
    expect(interrupted.metadata.cordisSubagents).to.deep.include({ stopReason: 'interrupted', code: 'HOST_LOST', host: 'host-a' })
    expect(JSON.stringify(interrupted.status.message)).to.match(/died mid-turn/)
    // host-b takes it over and dies in its turn too: the task is interrupted again, with both messages kept.
    const again = (await d.rpc(b, 'SendMessage', { message: message('[hold] go on', task), configuration: { returnImmediately: true } })).result
    expect(again?.task?.id, JSON.stringify(again)).to.equal(task.id)
    await until(() => d.calls('m1').length === 2, 'host-b works on the task')
    await b.kill()
    await until(async () => (await d.rpc(c, 'GetTask', { id: task.id })).result.status.state === 'TASK_STATE_INPUT_REQUIRED', 'interrupted again')
    const done = await d.rpc(c, 'SendMessage', { message: message('finish now', task) })
    expect(done.result?.task?.status?.state, JSON.stringify(done)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(done.result.task.artifacts)).to.include('finished: finish now')
    expect(d.calls('m1')).to.deep.equal(['host-a hold', 'host-b hold', 'host-c reply:finish now'])
  })

  it('idle: an interrupted task waits in the store (no process holds it) through more hosts dying; a host started later continues it', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const task = (await d.rpc(a, 'SendMessage', { message: message('[hold] idle soon [job:i1]'), configuration: { returnImmediately: true } })).result.task
    await until(() => d.calls('i1').length === 1, 'host-a works on the task')
    await a.kill()
    await until(async () => (await d.rpc(b, 'GetTask', { id: task.id })).result.status.state === 'TASK_STATE_INPUT_REQUIRED', 'interrupted')
    // Idle: no host runs it, none holds an agent for it; b (which saw it first) dies as well.
    expect(await b.stats()).to.deep.equal({ parked: 0, running: 0 })
    await b.kill()
    const c = await d.start('host-c')
    expect((await d.rpc(c, 'GetTask', { id: task.id })).result.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    const done = await d.rpc(c, 'SendMessage', { message: message('wake up', task) })
    expect(done.result?.task?.status?.state, JSON.stringify(done)).to.equal('TASK_STATE_COMPLETED')
    expect(d.calls('i1')).to.deep.equal(['host-a hold', 'host-c reply:wake up'])
  })

  it('an answer the balancer sends to another host than the live owner: the task moves there, the owner lets its agent go, never refused', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const parked = (await d.rpc(a, 'SendMessage', { message: message('[ask] paint the shed [job:f1]') })).result.task
    expect(await a.stats()).to.deep.equal({ parked: 1, running: 0 })
    const answered = await d.rpc(b, 'SendMessage', { message: message('blue', parked) })
    expect(answered.result?.task?.status?.state, JSON.stringify(answered)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(answered.result.task.artifacts)).to.include('painted blue')
    await until(async () => (await a.stats()).parked === 0, 'host-a let go of its parked agent')
    // A second answer finds the task finished (the SDK's terminal-state error), on either host; nothing runs again.
    for (const host of [a, b]) {
      const late = await d.rpc(host, 'SendMessage', { message: message('green', parked) })
      expect(late.error?.message, JSON.stringify(late)).to.match(/terminal state/)
    }
    expect(d.calls('f1')).to.deep.equal(['host-a ask', 'host-b finish'])
  })

  it('provider-a2a streaming from a host that dies: the run learns at once, finds the task interrupted on another host, and resuming it finishes there', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const parent = await startHost({
      before(ctx) {
        ctx.plugin(a2a, { name: 'remote', urls: [a.url, b.url], bearerToken: 'host-failure-token-0123456789abcdef' } as a2a.Config)
      },
    })
    try {
      await parent.ctx.subagents.ready('remote', { timeout: 30_000 })
      const agent = parent.ctx.agents.create()
      const run = await parent.ctx.subagents.delegate('remote', { prompt: '[hold] stream this [job:s1]', parent: agent, signal: new AbortController().signal })
      await until(() => d.calls('s1').length === 1, 'a host works on the task')
      const [owner] = d.calls('s1')[0].split(' ')
      const [victim, survivor] = owner === a.name ? [a, b] : [b, a]
      const killedAt = Date.now()
      await victim.kill()
      const result = await run.result
      const tookMs = Date.now() - killedAt
      console.log(`      the parent's run heard of ${victim.name}'s death after ${tookMs} ms (lease ${LEASE_MS} ms)`)
      expect(result.stopReason, result.diagnostic).to.equal('pending')
      expect(result.question?.text).to.match(new RegExp(`host ${victim.name} .*died mid-turn`))
      const resumed = await run.resume!('finish it')
      expect(resumed.stopReason, resumed.diagnostic).to.equal('completed')
      expect(resumed.output).to.include('finished: finish it')
      expect(d.calls('s1')).to.deep.equal([`${victim.name} hold`, `${survivor.name} reply:finish it`])
      await run.dispose()
      await agent.dispose()
    } finally {
      await parent.stop()
    }
  })
})
