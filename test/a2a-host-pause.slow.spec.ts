// A serve-a2a host of a shared store paused (SIGSTOP) past its lease while its turn runs: another
// host marks the task interrupted meanwhile. Nobody continued it, so when the host goes on, its lease
// is renewed under the same id and the turn runs on: the answer is kept, the task ends completed for
// the client waiting on it and in the store, and the model ran once.
import { expect } from 'chai'
import { type Deployment, deployment, message } from './support/a2a-shared-hosts.js'
import { eventually as until } from './support/async.js'

const LEASE_MS = 1000

describe('serve-a2a shared: a host paused past its lease mid-turn (real hosts, PostgreSQL)', function () {
  this.timeout(120_000)
  let d: Deployment

  beforeEach(async () => {
    d = await deployment(LEASE_MS)
  })

  afterEach(async () => {
    await d?.close()
  })

  it('its turn completes after it goes on: the client and the store get completed with the answer, the model ran once', async () => {
    const a = await d.start('host-a')
    const b = await d.start('host-b')
    const waiting = d.rpc(a, 'SendMessage', { message: message('[sleep] take your time [job:z1]') })
    await until(() => d.calls('z1').length === 1, 'host-a runs the turn')
    // Paused once the store says it works on it (its first save may land after the model call starts).
    await until(async () => (await d.rpc(b, 'ListTasks', {})).result.tasks[0]?.status?.state === 'TASK_STATE_WORKING', 'the store has it working')
    process.kill(a.pid, 'SIGSTOP')
    let interrupted: any
    try {
      interrupted = await until(async () => {
        const [task] = (await d.rpc(b, 'ListTasks', {})).result.tasks
        return task?.status?.state === 'TASK_STATE_INPUT_REQUIRED' ? task : undefined
      }, 'host-b marks the paused host\'s task interrupted')
    } finally {
      process.kill(a.pid, 'SIGCONT')
    }
    expect(interrupted.metadata.cordisSubagents).to.deep.include({ code: 'HOST_LOST', stopReason: 'interrupted' })
    const answer = await waiting
    expect(answer.result?.task?.status?.state, JSON.stringify(answer)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(answer.result.task.artifacts)).to.include('slept')
    const stored = await until(async () => {
      const got = (await d.rpc(b, 'GetTask', { id: interrupted.id })).result
      return got.status.state === 'TASK_STATE_COMPLETED' ? got : undefined
    }, 'the store holds the completed task')
    expect(JSON.stringify(stored.artifacts)).to.include('slept')
    expect(d.calls('z1')).to.have.length(1)
    expect(await a.stats()).to.deep.equal({ parked: 0, running: 0 })
  })
})
