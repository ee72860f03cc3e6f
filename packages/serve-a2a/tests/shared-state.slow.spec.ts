// Two serve-a2a hosts sharing their tasks in PostgreSQL (`shared`): any host answers GetTask,
// ListTasks, SubscribeToTask and CancelTask for a task another host runs; a host whose lease
// expires has its unfinished tasks interrupted by another host (any host continues them), and
// stops running them itself; an answer through any host continues a waiting task, once.
import { randomUUID } from 'node:crypto'
import { expect } from 'chai'
import AgentRuntime, { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { Context } from 'cordis'
import A2aServer, { ServeA2aError } from '../src/index.js'
import { namesOf } from '../src/shared-schema.js'
import { TaskFeed } from '../src/task-feed.js'
import { bearer, rpc, serve, type Served, watchAgents } from './helpers.js'
import { dropSchema, freshSchema, PG_URL, withPg } from './shared-support.js'
import { eventually } from '@cordis-subagents/test-support'

/** Waits that span hosts sharing a store get 15 s. */
const until = <T>(check: () => T | Promise<T>, what: string, ms = 15_000) => eventually(check, what, { timeout: ms, every: 25 })

const TOKEN = 'shared-state-token-0123456789'
const V1 = { 'A2A-Version': '1.0', ...bearer(TOKEN) }

/** A model that holds a task whose prompt says `hold` until released or aborted; counts runs and aborts. */
function holdingModel() {
  const state = { calls: 0, aborted: 0, release: () => {} }
  let gate = new Promise<void>((resolve) => { state.release = resolve })
  const script = async (request: GenerateRequest) => {
    state.calls++
    const prompt = request.messages.find((message) => message.role === 'user')?.content ?? ''
    if (prompt.includes('hold')) {
      await new Promise<void>((resolve, reject) => {
        request.signal.addEventListener('abort', () => { state.aborted++; reject(request.signal.reason) }, { once: true })
        void gate.then(resolve)
      })
    }
    return ScriptedModel.text(`answer to ${prompt}`)
  }
  return { state, script, reset: () => { gate = new Promise<void>((resolve) => { state.release = resolve }) } }
}

function send(url: string, text: string, returnImmediately = false) {
  return rpc(url, {
    jsonrpc: '2.0', id: 1, method: 'SendMessage',
    params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately } },
  }, V1)
}

function call(url: string, method: string, params: Record<string, unknown>) {
  return rpc(url, { jsonrpc: '2.0', id: 2, method, params }, V1)
}

/** The SSE `data:` events of a streaming JSON-RPC call, parsed, until the stream ends. */
/** A stream read to its end (`events`); `opened` resolves at its first event, when the subscription is in place. */
function follow(url: string, method: string, params: unknown): { opened: Promise<void>; events: Promise<any[]> } {
  let opened!: () => void
  const first = new Promise<void>((resolve) => { opened = resolve })
  const events = (async () => {
    const response = await fetch(`${url}/a2a/jsonrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...V1 },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method, params }),
    })
    const got: any[] = []
    let text = ''
    const decoder = new TextDecoder()
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk, { stream: true })
      const lines = text.split('\n')
      text = lines.pop()!
      for (const line of lines) if (line.startsWith('data:')) got.push(JSON.parse(line.slice(5)))
      if (got.length) opened()
    }
    opened()
    return got
  })()
  return { opened: first, events }
}

describe('serve-a2a: shared task state across hosts (PostgreSQL)', function () {
  this.timeout(60_000)
  let schema: string
  const hosts: Served[] = []

  async function host(name: string, model: ReturnType<typeof holdingModel>, extra: Record<string, unknown> = {}): Promise<Served> {
    const shared = { url: PG_URL, schema, hostName: name, leaseMs: 1000, ...extra }
    const served = await serve({ tokens: [TOKEN], shared: shared as never }, model.script)
    hosts.push(served)
    return served
  }

  beforeEach(async () => {
    schema = freshSchema()
    await withPg(async () => {})
  })

  afterEach(async () => {
    for (const served of hosts.splice(0)) await served.ctx.stop()
    await dropSchema(schema)
  })

  it('a task run on one host is read, listed and followed to its end on another', async () => {
    const modelA = holdingModel()
    const a = await host('host-a', modelA)
    const b = await host('host-b', holdingModel())
    const done = await send(a.server.url, 'plain question')
    const id: string = done.body.result.task.id
    const got = await call(b.server.url, 'GetTask', { id })
    expect(got.body.result.status.state).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(got.body.result.artifacts)).to.include('answer to plain question')
    const listed = await call(b.server.url, 'ListTasks', { includeArtifacts: true })
    expect(listed.body.result.tasks.map((task: { id: string }) => task.id)).to.deep.equal([id])

    // A running task: resubscribe on B sees the task, then A's answer and the final state.
    const started = await send(a.server.url, 'hold this', true)
    const held: string = started.body.result.task.id
    await until(() => a.server.runningTasks === 1, 'the task runs on A')
    await until(async () => (await call(b.server.url, 'GetTask', { id: held })).body.result.status.state === 'TASK_STATE_WORKING', 'B sees it working')
    const following = follow(b.server.url, 'SubscribeToTask', { id: held })
    await following.opened
    modelA.state.release()
    const events = await following.events
    const kinds = events.map((event) => Object.keys(event.result)[0])
    expect(kinds[0], JSON.stringify(events)).to.equal('task')
    expect(JSON.stringify(events)).to.include('answer to hold this')
    expect(events.at(-1).result.statusUpdate.status.state).to.equal('TASK_STATE_COMPLETED')
    expect(modelA.state.calls).to.equal(2)
    expect(b.model.callCount).to.equal(0)
  })

  it('cancel through another host reaches the host running the task: its run is aborted and the task ends canceled', async () => {
    const modelA = holdingModel()
    const modelB = holdingModel()
    const a = await host('host-a', modelA)
    const b = await host('host-b', modelB)
    const started = await send(a.server.url, 'hold then cancel', true)
    const id: string = started.body.result.task.id
    await until(() => modelA.state.calls === 1, 'the model runs on A')
    const canceled = await call(b.server.url, 'CancelTask', { id })
    expect(canceled.body.result?.status?.state, JSON.stringify(canceled.body)).to.equal('TASK_STATE_CANCELED')
    expect(modelA.state.aborted).to.equal(1)
    await until(() => a.server.runningTasks === 0, 'A\'s run ended')
    expect(modelB.state.calls).to.equal(0)
    // A finished task is not cancelable, from any host, and an unknown id is not found.
    const again = await call(a.server.url, 'CancelTask', { id: (await send(b.server.url, 'quick')).body.result.task.id })
    expect(again.body.error?.message).to.match(/not cancelable/i)
    // A message on a task that runs on another (live) host is refused there, naming the host.
    modelA.reset()
    const callsOnB = modelB.state.calls
    const held: string = (await send(a.server.url, 'hold for a follow-up', true)).body.result.task.id
    await until(() => modelA.state.calls === 2, 'the second task runs on A')
    const followUp = await call(b.server.url, 'SendMessage', {
      message: { messageId: randomUUID(), taskId: held, role: 'ROLE_USER', parts: [{ text: 'the answer' }] },
    })
    expect(followUp.body.error?.message, JSON.stringify(followUp.body)).to.match(new RegExp(`${held} is running on host host-a`))
    expect(modelB.state.calls).to.equal(callsOnB)
    expect((await call(b.server.url, 'CancelTask', { id: held })).body.result?.status?.state).to.equal('TASK_STATE_CANCELED')
    const unknown = await call(b.server.url, 'CancelTask', { id: randomUUID() })
    expect(unknown.body.error?.message).to.match(/not found/i)
  })

  it('a host whose lease expires while it still runs: another host interrupts its task (HOST_LOST); the host renews the same lease and finishes the turn', async () => {
    const modelA = holdingModel()
    const modelB = holdingModel()
    const a = await host('host-a', modelA)
    const b = await host('host-b', modelB)
    const started = await send(a.server.url, 'hold while the lease goes', true)
    const id: string = started.body.result.task.id
    await until(() => modelA.state.calls === 1, 'the model runs on A')
    // As if host-a had stalled past its lease: its row expires (by the database's clock); its lock is still held.
    const lost = a.server.sharedHostId!
    await withPg((sql) => sql.unsafe(`UPDATE "${schema}".a2a_hosts SET lease_until = now() - interval '1 second' WHERE id = $1`, [lost]))
    const interrupted = await until(async () => {
      const got = await call(b.server.url, 'GetTask', { id })
      return got.body.result.status.state === 'TASK_STATE_INPUT_REQUIRED' ? got.body.result : undefined
    }, 'the task is interrupted by a reaper')
    expect(JSON.stringify(interrupted.status.message)).to.match(/host-a .*died mid-turn/)
    expect(interrupted.metadata.cordisSubagents).to.deep.include({ code: 'HOST_LOST', host: 'host-a', stopReason: 'interrupted' })
    // host-a notices at its next renewal: nobody took the task, so the same lease goes on and the task works again.
    const working = await until(async () => {
      const got = (await call(b.server.url, 'GetTask', { id })).body.result
      return got.status.state === 'TASK_STATE_WORKING' ? got : undefined
    }, 'host-a takes its task back')
    expect(JSON.stringify(working.status.message)).to.match(/host-a that runs this task was paused past its lease and went on/)
    expect(a.server.sharedHostId).to.equal(lost)
    expect(modelA.state.aborted).to.equal(0)
    // It runs there: a message through host-b is refused, naming host-a.
    const joined = await rpc(b.server.url, {
      jsonrpc: '2.0', id: 4, method: 'SendMessage',
      params: { message: { messageId: randomUUID(), taskId: id, contextId: interrupted.contextId, role: 'ROLE_USER', parts: [{ text: 'go on' }] } },
    }, V1)
    expect(joined.body.error?.message, JSON.stringify(joined.body)).to.match(new RegExp(`${id} is running on host host-a`))
    modelA.state.release()
    const done = await until(async () => {
      const got = (await call(b.server.url, 'GetTask', { id })).body.result
      return got.status.state === 'TASK_STATE_COMPLETED' ? got : undefined
    }, 'the turn completes on host-a')
    expect(JSON.stringify(done.artifacts)).to.include('answer to hold while the lease goes')
    expect(modelA.state.calls).to.equal(1)
    expect(modelB.state.calls).to.equal(0)
  })

  it('a host whose database session alone ends is gone at once: its task is interrupted, and it stops the run under a new lease', async () => {
    const modelA = holdingModel()
    // Renewed every 5 s, expiring after 15 s: what B sees below comes from the lock, not the lease.
    const a = await host('host-a', modelA, { leaseMs: 15_000 })
    const b = await host('host-b', holdingModel(), { leaseMs: 15_000 })
    const id: string = (await send(a.server.url, 'hold, then lose the session', true)).body.result.task.id
    await until(() => modelA.state.calls === 1, 'the model runs on A')
    const lost = a.server.sharedHostId!
    // A follower on B: its stream ends where the task waits (interrupted), like a local one at a question.
    await until(async () => (await call(b.server.url, 'GetTask', { id })).body.result.status.state === 'TASK_STATE_WORKING', 'B sees it working')
    const following = follow(b.server.url, 'SubscribeToTask', { id })
    // Subscribed (its first event, the task as it is) before the session ends: what follows reaches it as a status update.
    await following.opened
    await withPg((sql) => sql.unsafe(`SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN "${schema}".a2a_hosts h ON l.objid = h.lock_key::oid
      WHERE h.id = $1 AND l.locktype = 'advisory' AND l.objsubid = 2`, [lost]))
    // B sees the lock gone when asked.
    const task = await until(async () => {
      const got = (await call(b.server.url, 'GetTask', { id })).body.result
      return got.status.state === 'TASK_STATE_INPUT_REQUIRED' ? got : undefined
    }, 'B interrupts the task', 15_000)
    expect(task.metadata.cordisSubagents).to.deep.include({ code: 'HOST_LOST', host: 'host-a', stopReason: 'interrupted' })
    const events = await following.events
    expect(events.at(-1).result.statusUpdate?.status?.state, JSON.stringify(events)).to.equal('TASK_STATE_INPUT_REQUIRED')
    // host-a finds its lock gone at its next renewal: a new lease, and the run stopped (its late save ignored).
    await until(() => modelA.state.aborted === 1 && a.server.runningTasks === 0, 'host-a stopped the run', 30_000)
    expect(a.server.sharedHostId).to.not.equal(lost)
    expect((await call(b.server.url, 'GetTask', { id })).body.result.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
  })

  /** Two hosts serving an agent that asks (`askParent`); `finished` counts the turns that went on after an answer. */
  async function askingHosts(names: string[], parkedTimeouts: number[] = []) {
    const counts = { asked: 0, finished: 0 }
    const script = (request: GenerateRequest) => {
      const answer = request.messages.find((message) => message.role === 'tool' && message.name === 'ask_parent')
      if (!answer) counts.asked++
      else counts.finished++
      return answer ? ScriptedModel.text(`painted ${answer.content}`) : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
    }
    const served: Served[] = []
    for (const [i, name] of names.entries()) {
      const shared = { url: PG_URL, schema, hostName: name, leaseMs: 1000 }
      const parkedTimeout = parkedTimeouts[i] ?? 600_000
      served.push(await serve({ tokens: [TOKEN], askParent: true, parkedTimeout, shared: shared as never }, script))
      hosts.push(served.at(-1)!)
    }
    return { counts, served }
  }

  const answer = (url: string, task: { id: string; contextId: string }, text: string) => rpc(url, {
    jsonrpc: '2.0', id: 5, method: 'SendMessage',
    params: { message: { messageId: randomUUID(), taskId: task.id, contextId: task.contextId, role: 'ROLE_USER', parts: [{ text }] } },
  }, V1)

  it('two answers at once through two hosts: one continues the task, the other is told; the answered turn runs once', async () => {
    const { counts, served: [a, b] } = await askingHosts(['host-a', 'host-b'])
    for (let round = 0; round < 6; round++) {
      const task = (await send(a.server.url, `paint round ${round}`)).body.result.task
      expect(task.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
      const replies = await Promise.all([answer(a.server.url, task, 'red'), answer(b.server.url, task, 'blue')])
      const done = replies.filter((reply) => reply.body.result?.task?.status?.state === 'TASK_STATE_COMPLETED')
      expect(done, JSON.stringify(replies.map((reply) => reply.body))).to.have.length(1)
      const other = replies.find((reply) => !done.includes(reply))!
      // The loser is told whichever way the race went: it lost the claim (just continued), the winner's turn is
      // still running on the winner's host (seen on a loaded machine), or it has already ended (terminal state).
      const winner = replies[0] === done[0] ? 'host-a' : 'host-b'
      expect(other.body.error?.message, JSON.stringify(other.body))
        .to.match(new RegExp(`just continued|terminal state|is running on host ${winner};`))
      expect(counts.finished, `round ${round}`).to.equal(round + 1)
    }
    await until(() => a.server.parkedTasks === 0 && b.server.parkedTasks === 0, 'no agent is left parked')
    expect(counts.asked).to.equal(6)
  })

  it('a host stopped cleanly with a task waiting for an answer: the answer through another host continues it', async () => {
    const { counts, served: [a, b] } = await askingHosts(['host-a', 'host-b'])
    const task = (await send(a.server.url, 'paint before the stop')).body.result.task
    hosts.splice(hosts.indexOf(a), 1)
    await a.ctx.stop()
    const reply = await answer(b.server.url, task, 'green')
    expect(reply.body.result?.task?.status?.state, JSON.stringify(reply.body)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(reply.body.result.task.artifacts)).to.include('painted green')
    expect(counts).to.deep.equal({ asked: 1, finished: 1 })
  })

  it('a damaged saved turn (its agent waits for no answer): an answer through another host fails the task, and the agent it restored is disposed', async () => {
    const { counts, served: [a, b] } = await askingHosts(['host-a', 'host-b'])
    const task = (await send(a.server.url, 'paint a task whose record is damaged')).body.result.task
    expect(task.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    hosts.splice(hosts.indexOf(a), 1)
    await a.ctx.stop()
    // As if the row were damaged: a valid checkpoint of an agent that is not parked (no parked turn, none of its messages).
    const damaged = await withPg((sql) => sql.unsafe(`UPDATE "${schema}".a2a_turns SET saved = jsonb_set(saved #- '{agent,parked}', '{agent,messages}', '[]')
      WHERE id = $1 RETURNING id`, [task.id]))
    expect(damaged).to.have.length(1)
    const made = watchAgents(b)
    const reply = await answer(b.server.url, task, 'green')
    const failed = reply.body.result?.task
    expect(failed?.status?.state, JSON.stringify(reply.body)).to.equal('TASK_STATE_FAILED')
    expect(JSON.stringify(failed.status.message)).to.include('could not be restored on this host: it is not waiting for an answer')
    expect(failed.metadata.cordisSubagents).to.deep.include({ code: 'RESTORE_FAILED' })
    expect(made).to.have.length(1)
    expect(made[0].disposed, 'the restored agent is disposed').to.equal(true)
    expect(b.server.parkedTasks).to.equal(0)
    expect(counts.finished).to.equal(0)
  })

  it('an answer whose turn cannot be saved (the agent\'s checkpoint throws): the task fails, and its parked agent is disposed', async () => {
    const { counts, served: [a] } = await askingHosts(['host-a'])
    const made = watchAgents(a)
    const task = (await send(a.server.url, 'paint, then the save breaks')).body.result.task
    expect(task.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    expect(made).to.have.length(1)
    made[0].checkpoint = () => { throw new Error('the checkpoint broke') }
    const reply = await answer(a.server.url, task, 'green')
    const failed = reply.body.result?.task
    expect(failed?.status?.state, JSON.stringify(reply.body)).to.equal('TASK_STATE_FAILED')
    expect(JSON.stringify(failed.status.message)).to.include('The task could not be set up: the checkpoint broke')
    expect(made[0].disposed, 'the parked agent is disposed').to.equal(true)
    expect(a.server.parkedTasks).to.equal(0)
    expect(counts.finished).to.equal(0)
  })

  it('a cancel of a waiting task whose save fails (a database error) leaves it waiting: an answer through any host still continues it', async () => {
    const { counts, served: [a, b] } = await askingHosts(['host-a', 'host-b'])
    const task = (await send(a.server.url, 'paint, then a cancel that cannot be saved')).body.result.task
    expect(task.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    hosts.splice(hosts.indexOf(a), 1)
    await a.ctx.stop()
    // The fault: the database refuses to record this task canceled (once a trigger is there, every time).
    await withPg((sql) => sql.unsafe(`CREATE FUNCTION "${schema}".refuse_cancel() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN IF NEW.state = 5 THEN RAISE EXCEPTION 'injected: the cancel cannot be saved'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER refuse_cancel BEFORE UPDATE ON "${schema}".a2a_tasks FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_cancel()`))
    const refused = await call(b.server.url, 'CancelTask', { id: task.id })
    expect(refused.body.error, JSON.stringify(refused.body)).to.not.equal(undefined)
    await withPg((sql) => sql.unsafe(`DROP TRIGGER refuse_cancel ON "${schema}".a2a_tasks; DROP FUNCTION "${schema}".refuse_cancel()`))
    expect((await call(b.server.url, 'GetTask', { id: task.id })).body.result.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
    const reply = await answer(b.server.url, task, 'green')
    expect(reply.body.result?.task?.status?.state, JSON.stringify(reply.body)).to.equal('TASK_STATE_COMPLETED')
    expect(JSON.stringify(reply.body.result.task.artifacts)).to.include('painted green')
    expect(counts).to.deep.equal({ asked: 1, finished: 1 })
  })

  it('a waiting task whose host is gone is canceled parkedTimeout after its last update by another host\'s reaper', async () => {
    const { served: [a, b] } = await askingHosts(['host-a', 'host-b'], [600_000, 300])
    const task = (await send(a.server.url, 'paint, then nobody answers')).body.result.task
    hosts.splice(hosts.indexOf(a), 1)
    await a.ctx.stop()
    const canceled = await until(async () => {
      const got = (await call(b.server.url, 'GetTask', { id: task.id })).body.result
      return got.status.state === 'TASK_STATE_CANCELED' ? got : undefined
    }, 'host-b expires the orphan')
    expect(JSON.stringify(canceled.status.message)).to.match(/no answer came within 300 ms.*host-a had died/)
  })

  it('a task whose final state was never saved (a database error then) is failed by its own host (STATE_LOST), not left working', async () => {
    const a = await host('host-a', holdingModel())
    const done = await send(a.server.url, 'finished, but the end is lost')
    const id: string = done.body.result.task.id
    // As if the final save had failed: the row still says working, its last update a while ago.
    await withPg((sql) => sql.unsafe(`UPDATE "${schema}".a2a_tasks SET state = 2, updated_at = now() - interval '10 seconds',
      task = jsonb_set(task, '{status,state}', '2') WHERE id = $1`, [id]))
    const failed = await until(async () => {
      const got = await call(a.server.url, 'GetTask', { id })
      return got.body.result.status.state === 'TASK_STATE_FAILED' ? got.body.result : undefined
    }, 'host-a fails its orphan')
    expect(failed.metadata.cordisSubagents).to.deep.include({ code: 'STATE_LOST', host: 'host-a' })
    expect(JSON.stringify(failed.status.message)).to.include('its final state could not be saved')
  })

  it('a client that heard its task end starts the next at once: the slot is not held through the task\'s cleanup', async () => {
    // One slot, and a shared store whose cleanup after a turn (the agent's disposal, the saved turn dropped) is a database
    // round trip: the next task, sent the moment the last one answered, must not find the slot still taken.
    const one = await serve({ tokens: [TOKEN], maxConcurrentTasks: 1, shared: { url: PG_URL, schema, hostName: 'host-one', leaseMs: 1000 } as never },
      holdingModel().script)
    hosts.push(one)
    for (let i = 0; i < 20; i++) {
      const answer = await send(one.server.url, `task ${i}`)
      expect(answer.body.result?.task?.status?.state, JSON.stringify(answer.body)).to.equal('TASK_STATE_COMPLETED')
    }
  })

  it('the store is bounded across hosts (maxStoredTasks) and a stopped host leaves no connection behind', async () => {
    const a = await host('host-bound-a', holdingModel(), {})
    hosts.pop()
    await a.ctx.stop()
    const bounded = await serve({ tokens: [TOKEN], maxStoredTasks: 4, maxConcurrentTasks: 2, taskTtl: 600_000, shared: { url: PG_URL, schema, hostName: 'host-bound', leaseMs: 1000 } as never }, holdingModel().script)
    hosts.push(bounded)
    const ids: string[] = []
    for (let i = 0; i < 10; i++) ids.push((await send(bounded.server.url, `task ${i}`)).body.result.task.id)
    const count = () => withPg(async (sql) => Number((await sql.unsafe(`SELECT count(*) AS n FROM "${schema}".a2a_tasks`))[0].n))
    await until(async () => await count() <= 4, 'the sweep evicts down to maxStoredTasks')
    await until(() => bounded.server.storedTasks > 0 && bounded.server.storedTasks <= 4, 'storedTasks reports the shared count')
    // The least recently updated go first: the newest is kept, the oldest is gone.
    expect((await call(bounded.server.url, 'GetTask', { id: ids[9] })).body.result?.id).to.equal(ids[9])
    expect((await call(bounded.server.url, 'GetTask', { id: ids[0] })).body.error?.message).to.match(/not found/i)
    hosts.pop()
    await bounded.ctx.stop()
    // The pool and the host's lock connection close as the stop disposes them (cordis awaits no async dispose): poll, bounded.
    const open = async () => (await withPg((sql) => sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'serve-a2a host-bound%'`))[0].n
    await until(async () => await open() === 0, 'the stopped host closed every connection')
  })

  it('a follower re-reads its task every lease even when no notification comes (one lost while reconnecting)', async () => {
    await withPg(async (sql) => {
      const feed = new TaskFeed(sql, namesOf(schema), () => {}, 150)
      const watch = feed.watch({ tenant: '', scope: 'credential-1', id: 'nobody-notifies-this' })!
      expect(await watch.changed()).to.equal(true)
      const closed = watch.changed()
      watch.close()
      expect(await closed).to.equal(false)
      expect(feed.watching).to.equal(0)
      await feed.stop()
    })
  })

  it('fails loudly: a URL variable not set, both url forms, a database that does not answer (the password never shown)', async () => {
    const load = (shared: Record<string, unknown>) => () => new A2aServer(new Context(), { tokens: [TOKEN], shared } as never)
    expect(load({ urlFromEnv: 'SERVE_A2A_NOT_SET_ANYWHERE' })).to.throw(ServeA2aError, /SERVE_A2A_NOT_SET_ANYWHERE is not set/).with.property('code', 'MISSING_CREDENTIAL')
    expect(load({ url: PG_URL, urlFromEnv: 'X' })).to.throw(ServeA2aError, /not both/).with.property('code', 'INVALID_CONFIG')
    expect(load({ url: 'mysql://x' })).to.throw(ServeA2aError, /postgres:\/\//).with.property('code', 'INVALID_CONFIG')
    const ctx = new Context()
    const errors: Error[] = []
    ctx.on('internal/error', (error: Error) => { errors.push(error) })
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, {})
    ctx.plugin(A2aServer, { tokens: [TOKEN], shared: { url: 'postgres://nobody:secret-pass@127.0.0.1:1/none', schema } } as never)
    await ctx.start()
    await ctx.lifecycle.flush()
    await until(() => errors.length, 'the load fails')
    expect(errors[0]).to.be.instanceOf(ServeA2aError).with.property('code', 'STORE_UNAVAILABLE')
    expect(errors[0].message).to.include('127.0.0.1:1').and.not.include('secret-pass')
    expect(ctx.get('a2aServer')?.url ?? '').to.equal('')
    await ctx.stop()
  })
})
