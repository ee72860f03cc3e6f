// Two serve-a2a hosts on one PostgreSQL store, watched from outside: every notification they send
// (a task changed, a cancel forwarded, a task claimed by another host) is of one fixed size per
// channel, whatever the task's key, and carries none of it; every channel still does its job for a
// task whose key is as long as the door allows (a 256-byte multi-byte tenant, 256-byte ids).
import { randomUUID } from 'node:crypto'
import { expect } from 'chai'
import postgres from 'postgres'
import { type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { digestOfLease, digestOfRef, movedPayload, taskPayload } from '../src/feed-payloads.js'
import { namesOf } from '../src/shared-schema.js'
import { TaskFeed } from '../src/task-feed.js'
import { bearer, rpc, serve, type Served } from './helpers.js'
import { dropSchema, freshSchema, PG_URL, withPg } from './shared-support.js'
import { eventually } from '@cordis-subagents/test-support'

/** Waits that span hosts sharing a store get 15 s. */
const until = <T>(check: () => T | Promise<T>, what: string, ms = 15_000) => eventually(check, what, { timeout: ms, every: 25 })

const TOKEN = 'shared-notify-token-0123456789'
const V1 = { 'A2A-Version': '1.0', ...bearer(TOKEN) }
/** 256 bytes of UTF-8 in 96 characters (4- and 2-byte ones): the longest tenant the door accepts. */
const LONG_TENANT = '\u{1F600}'.repeat(32) + '\u00e9'.repeat(64)

/** A task's tenant and the ids a client picks for it (the task id is always the server's UUID). */
interface Key { tenant: string; contextId: () => string | undefined; messageId: () => string }
const SHORT: Key = { tenant: '', contextId: () => undefined, messageId: () => randomUUID() }
const LONG: Key = {
  tenant: LONG_TENANT,
  contextId: () => '\u00e7'.repeat(110) + randomUUID(),
  messageId: () => '\u20ac'.repeat(73) + randomUUID().slice(0, 35),
}

/** Holds a turn whose prompt says `hold` until released or aborted; asks a question when it says `ask`. */
function model() {
  const state = { aborted: 0, release: () => {} }
  let gate = new Promise<void>((resolve) => { state.release = resolve })
  const script = async (request: GenerateRequest) => {
    const prompt = request.messages.find((message) => message.role === 'user')?.content ?? ''
    const answer = request.messages.find((message) => message.role === 'tool' && message.name === 'ask_parent')
    if (prompt.includes('ask') && !answer) return { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
    if (prompt.includes('hold')) {
      await new Promise<void>((resolve, reject) => {
        request.signal.addEventListener('abort', () => { state.aborted++; reject(request.signal.reason) }, { once: true })
        void gate.then(resolve)
      })
    }
    return ScriptedModel.text(`answer to ${prompt}${answer ? ` with ${answer.content}` : ''}`)
  }
  return { state, script, reset: () => { gate = new Promise<void>((resolve) => { state.release = resolve }) } }
}

function call(url: string, method: string, params: Record<string, unknown>) {
  return rpc(url, { jsonrpc: '2.0', id: 1, method, params }, V1)
}

function send(url: string, key: Key, text: string, returnImmediately = false, task?: { id: string; contextId: string }) {
  const contextId = task?.contextId ?? key.contextId()
  return call(url, 'SendMessage', {
    tenant: key.tenant, configuration: { returnImmediately },
    message: { messageId: key.messageId(), role: 'ROLE_USER', parts: [{ text }], ...contextId ? { contextId } : {}, ...task ? { taskId: task.id } : {} },
  })
}

/** The SSE `data:` events of a streaming JSON-RPC call, parsed, as they come. */
async function* sse(url: string, method: string, params: unknown): AsyncGenerator<any> {
  const response = await fetch(`${url}/a2a/jsonrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...V1 },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method, params }),
  })
  const decoder = new TextDecoder()
  let buffered = ''
  for await (const chunk of response.body!) {
    buffered += decoder.decode(chunk, { stream: true })
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      if (line.startsWith('data:')) yield JSON.parse(line.slice(5))
    }
  }
}

describe('serve-a2a shared: notifications between hosts are of fixed size, whatever the task\'s key (PostgreSQL)', function () {
  this.timeout(60_000)
  let schema: string
  let listener: postgres.Sql | undefined
  const hosts: Served[] = []

  beforeEach(async () => {
    schema = freshSchema()
    await withPg(async () => {})
  })

  afterEach(async () => {
    for (const served of hosts.splice(0)) await served.ctx.stop()
    await listener?.end({ timeout: 1 })
    listener = undefined
    await dropSchema(schema)
  })

  it('a task with the longest key is followed, canceled, claimed and interrupted across two hosts; every payload has its channel\'s one size', async () => {
    // A follower's re-read comes only every lease (2 min): what it sees below came through the notifications.
    const shared = (hostName: string) => ({ url: PG_URL, schema, hostName, leaseMs: 120_000 })
    const modelA = model()
    const a = await serve({ tokens: [TOKEN], askParent: true, shared: shared('host-a') as never }, modelA.script)
    hosts.push(a)
    const b = await serve({ tokens: [TOKEN], askParent: true, shared: shared('host-b') as never }, model().script)
    hosts.push(b)
    const names = namesOf(schema)
    const channels = [names.taskChannel, names.cancelChannel, names.movedChannel]
    const seen = new Map<string, string[]>(channels.map((channel) => [channel, []]))
    listener = postgres(PG_URL, { max: 1, onnotice: () => {} })
    for (const channel of channels) await listener.listen(channel, (payload) => seen.get(channel)!.push(payload))

    expect([LONG.tenant, LONG.contextId()!, LONG.messageId()].map((text) => Buffer.byteLength(text))).to.deep.equal([256, 256, 254])
    for (const key of [SHORT, LONG]) {
      const tenant = { tenant: key.tenant }
      // Followed on B while it runs on A: the task, then A's answer and its end.
      const followed = (await send(a.server.url, key, 'hold to follow', true)).body.result.task
      await until(() => a.server.runningTasks === 1, 'the task runs on A')
      const stream = sse(b.server.url, 'SubscribeToTask', { ...tenant, id: followed.id })
      const first = await stream.next()
      expect(first.value?.result?.task?.id, JSON.stringify(first.value)).to.equal(followed.id)
      modelA.state.release()
      const rest: any[] = []
      for await (const event of stream) rest.push(event)
      expect(JSON.stringify(rest)).to.include('answer to hold to follow')
      expect(rest.at(-1)?.result?.statusUpdate?.status?.state, JSON.stringify(rest)).to.equal('TASK_STATE_COMPLETED')
      modelA.reset()

      // Canceled through B: forwarded to A, which aborts the run.
      const held = (await send(a.server.url, key, 'hold then cancel', true)).body.result.task
      await until(() => a.server.runningTasks === 1, 'the second task runs on A')
      const aborted = modelA.state.aborted
      const canceled = await call(b.server.url, 'CancelTask', { ...tenant, id: held.id })
      expect(canceled.body.result?.status?.state, JSON.stringify(canceled.body)).to.equal('TASK_STATE_CANCELED')
      expect(modelA.state.aborted).to.equal(aborted + 1)

      // Waiting on A, answered through B: B claims it, and A lets its parked agent go.
      const asked = (await send(a.server.url, key, 'ask for a colour')).body.result.task
      expect(asked.status.state, JSON.stringify(asked)).to.equal('TASK_STATE_INPUT_REQUIRED')
      expect(a.server.parkedTasks).to.equal(1)
      const answered = await send(b.server.url, key, 'red', false, asked)
      expect(answered.body.result?.task?.status?.state, JSON.stringify(answered.body)).to.equal('TASK_STATE_COMPLETED')
      await until(() => a.server.parkedTasks === 0, 'A let the claimed task go')
    }

    // A's lease runs out with a task of each key running there: B interrupts both (the reaper's writes notify too).
    const running = [(await send(a.server.url, SHORT, 'hold, short', true)).body.result.task, (await send(a.server.url, LONG, 'hold, long', true)).body.result.task]
    await until(() => a.server.runningTasks === 2, 'both run on A')
    await withPg((sql) => sql.unsafe(`UPDATE "${schema}".a2a_hosts SET lease_until = now() - interval '1 second' WHERE id = $1`, [a.server.sharedHostId!]))
    for (const [i, task] of running.entries()) {
      await until(async () => (await call(b.server.url, 'GetTask', { tenant: [SHORT, LONG][i].tenant, id: task.id })).body.result?.status?.state === 'TASK_STATE_INPUT_REQUIRED',
        'B interrupts the task of the gone lease')
    }

    // Every notification of the run, on each channel: one size, the key nowhere.
    await until(() => seen.get(names.cancelChannel)!.length >= 2 && seen.get(names.movedChannel)!.length >= 2, 'the listener heard the cancels and claims')
    const sizeSet = (channel: string) => [...new Set(seen.get(channel)!.map((payload) => Buffer.byteLength(payload)))]
    const sizes = Object.fromEntries(channels.map((channel) => [channel, sizeSet(channel)]))
    const samples = [...seen].map(([channel, payloads]) => [channel, payloads.length, payloads.at(-1)])
    expect(sizes, JSON.stringify(samples))
      .to.deep.equal({ [names.taskChannel]: [66], [names.cancelChannel]: [66], [names.movedChannel]: [131] })
    expect(new Set(seen.get(names.cancelChannel)).size).to.equal(2)
    const all = [...seen.values()].flat()
    expect(all.length).to.be.greaterThan(10)
    for (const payload of all) expect(payload).to.match(/^1( [0-9a-f]{64}){1,2}$/).and.not.include('\u00e9').and.not.include(running[1].id)
    // A's lease is not renewed within the test: its turns complete and are saved (the row is still its lease's) before the hosts stop.
    modelA.state.release()
    for (const [i, task] of running.entries()) {
      await until(async () => (await call(b.server.url, 'GetTask', { tenant: [SHORT, LONG][i].tenant, id: task.id })).body.result?.status?.state === 'TASK_STATE_COMPLETED',
        'A\'s turn ends and is saved')
    }
  })
  it('a payload of another shape (an older host\'s key JSON, junk, 7,999 bytes) is ignored; the next one of this version is acted on', async () => {
    const names = namesOf(schema)
    const ref = { tenant: LONG_TENANT, scope: 'cred-0123', id: randomUUID() }
    const legacy = JSON.stringify([ref.tenant, ref.scope, ref.id])
    const junk = ['', '1', '1 ', `1 ${'g'.repeat(64)}`, `2 ${digestOfRef(ref)}`, `1 ${digestOfRef(ref)} `, `1 ${legacy}`, legacy, `7 ${legacy}`, 'x'.repeat(7999)]
    await withPg(async (sql) => {
      const cancels: string[] = []
      const moves: string[][] = []
      const feed = new TaskFeed(sql, names, (digest) => cancels.push(digest), 600_000, (digest, by) => moves.push([digest, by]))
      await feed.start()
      const watch = feed.watch(ref)!
      try {
        for (const payload of junk) {
          for (const channel of [names.taskChannel, names.cancelChannel]) await sql`SELECT pg_notify(${channel}, ${payload})`
          await sql`SELECT pg_notify(${names.movedChannel}, ${`host-b#1234 ${legacy}`})`
        }
        // Delivered in order on the one listening connection: once the valid ones arrived, every junk one was read.
        await sql`SELECT pg_notify(${names.cancelChannel}, ${taskPayload(ref)})`
        await sql`SELECT pg_notify(${names.movedChannel}, ${movedPayload(ref, 'host-b#1234')})`
        await until(() => moves.length, 'the claim is heard')
        expect(cancels).to.deep.equal([digestOfRef(ref)])
        expect(moves).to.deep.equal([[digestOfRef(ref), digestOfLease('host-b#1234')]])
        const woken = watch.changed()
        await sql`SELECT pg_notify(${names.taskChannel}, ${taskPayload({ ...ref, id: randomUUID() })})`
        await sql`SELECT pg_notify(${names.taskChannel}, ${taskPayload(ref)})`
        expect(await woken).to.equal(true)
      } finally {
        watch.close()
        await feed.stop()
      }
    })
  })
})
