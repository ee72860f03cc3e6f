/// <reference types="mocha" />
// A served agent that asks (`askParent`): its turn ends pending, the task goes input-required with
// the question as the status message; the client's next message on the task is the answer
// (agent.resume). Both protocol versions, blocking and streamed; cancel, parkedTimeout and
// maxParkedTasks end or refuse a waiting task.
import { randomUUID } from 'node:crypto'
import { expect } from 'chai'
import { Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk'
import { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { bearer, client03, client10, drain, message10, serve, type Served, watchAgents } from './helpers.js'
import { eventually as until } from '@cordis-subagents/test-support'

/** Asks "Which file should I read?"; an answer starting with `again` makes it ask "Which line?"; any other is read back. */
function asker(request: GenerateRequest): ScriptedResponse {
  const last = request.messages.at(-1)!
  if (last.role !== 'tool') return ScriptedModel.call('ask_parent', { question: 'Which file should I read?' })
  if (last.content.startsWith('again')) return ScriptedModel.call('ask_parent', { question: 'Which line?' })
  return ScriptedModel.text(`read ${last.content}`)
}

/** A 1.0 message answering task `task` (its id and context). */
function answer10(text: string, task: { id: string; contextId: string }) {
  const params = message10(text)
  return { ...params, message: { ...params.message, taskId: task.id, contextId: task.contextId } }
}

function statusText(task: Task): string {
  const part = task.status?.message?.parts[0]?.content
  return part?.$case === 'text' ? part.value : ''
}

function artifactText(task: Task): string {
  const part = task.artifacts[0]?.parts[0]?.content
  return part?.$case === 'text' ? part.value : ''
}

/**
 * Whether the request handler's bus manager still holds a task's bus. The manager is the
 * executor's (`executor.buses`, private to the server); the call context is the one the SDK
 * created the bus under, seen when the bus is made.
 */
function watchBuses(served: Served): { live(taskId: string): boolean } {
  type Buses = { createOrGetByTaskId(id: string, context?: unknown): unknown; getByTaskId(id: string, context?: unknown): unknown }
  const buses = (served.server as unknown as { executor: { buses: Buses } }).executor.buses
  const contexts = new Map<string, unknown>()
  const create = buses.createOrGetByTaskId.bind(buses)
  buses.createOrGetByTaskId = (id, context) => {
    contexts.set(id, context)
    return create(id, context)
  }
  return { live: (taskId) => buses.getByTaskId(taskId, contexts.get(taskId)) !== undefined }
}

describe('serve-a2a: a served agent that asks', function () {
  this.timeout(20_000)
  let served: Served

  afterEach(async () => {
    await served?.ctx.stop()
    expect(served.server.parkedTasks, 'no parked task outlives the server').to.equal(0)
  })

  it('A2A 1.0 blocking: input-required with the question; the next message on the task resumes the agent → completed', async () => {
    served = await serve({ askParent: true }, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const parked = await client.sendMessage(message10('read something') as never) as Task
    expect(parked.status?.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(statusText(parked)).to.equal('Which file should I read?')
    type Meta = { cordisSubagents: { question: { id: string; kind: string } } }
    const question = (parked.status?.message?.metadata as Meta).cordisSubagents.question
    expect(question.kind).to.equal('ask')
    expect(question.id).to.match(/^q-/)
    expect(served.server.parkedTasks).to.equal(1)
    expect(served.server.runningTasks).to.equal(0)
    // A stopping server disposes the agents still waiting (checked after each test).

    const done = await client.sendMessage(answer10('notes.txt', parked) as never) as Task
    expect(done.id).to.equal(parked.id)
    expect(done.status?.state).to.equal(TaskState.TASK_STATE_COMPLETED)
    expect(artifactText(done)).to.equal('read notes.txt')
    expect(served.server.parkedTasks).to.equal(0)
    // The model saw the answer as the ask tool's result, in the same transcript.
    const lastCall = served.model.requests.at(-1)!
    expect(lastCall.messages.at(-1)).to.deep.include({ role: 'tool', name: 'ask_parent', content: 'notes.txt' })
    expect(lastCall.messages[0]).to.deep.include({ role: 'user', content: 'read something' })
  })

  it('A2A 1.0 streamed: the stream ends at input-required; a second stream with the answer asks again, a third completes', async () => {
    served = await serve({ askParent: true }, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const last = (events: StreamResponse[]) => events.filter((event) => event.payload?.$case === 'statusUpdate').at(-1)!.payload!.value as
      { status: { state: TaskState; message?: { parts: Array<{ content: { value: string } }>; metadata?: Record<string, any> } } }
    const first = await drain(client.sendMessageStream(message10('go') as never))
    const task = first[0].payload!.value as Task
    expect(last(first).status.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED)
    const firstId = last(first).status.message!.metadata!.cordisSubagents.question.id
    const second = await drain(client.sendMessageStream(answer10('again, sorry', task) as never))
    expect(last(second).status.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(last(second).status.message!.parts[0].content.value).to.equal('Which line?')
    expect(last(second).status.message!.metadata!.cordisSubagents.question.id).to.not.equal(firstId)
    const third = await drain(client.sendMessageStream(answer10('42', task) as never))
    expect(last(third).status.state).to.equal(TaskState.TASK_STATE_COMPLETED)
    const artifact = third.find((event) => event.payload?.$case === 'artifactUpdate')!.payload!.value as { artifact: { parts: Array<{ content: { value: string } }> } }
    expect(artifact.artifact.parts[0].content.value).to.equal('read 42')
  })

  it('A2A 0.3: message/send parks (input-required, lowercase) and the follow-up message/send with taskId completes', async () => {
    served = await serve({ askParent: true }, asker)
    const client = await client03(served.server.url, bearer(served.server.token))
    type Parts = { parts: Array<{ text?: string }> }
    type Task03 = { id: string; contextId: string; status: { state: string; message?: Parts & { metadata?: any } }; artifacts?: Parts[] }
    const sent = await client.sendMessage({ message: { kind: 'message', role: 'user', messageId: randomUUID(), parts: [{ kind: 'text', text: 'read it' }] }, configuration: { blocking: true } })
    const parked = (sent as { result: Task03 }).result
    expect(parked.status.state).to.equal('input-required')
    expect(parked.status.message!.parts[0].text).to.equal('Which file should I read?')
    expect(parked.status.message!.metadata.cordisSubagents.question.kind).to.equal('ask')
    const answered = await client.sendMessage({
      message: { kind: 'message', role: 'user', messageId: randomUUID(), taskId: parked.id, contextId: parked.contextId, parts: [{ kind: 'text', text: 'a.md' }] },
      configuration: { blocking: true },
    })
    const done = (answered as { result: Task03 }).result
    expect(done.status.state).to.equal('completed')
    expect(done.artifacts![0].parts[0].text).to.equal('read a.md')
  })

  it('an empty answer leaves the task waiting on the same question, saying why', async () => {
    served = await serve({ askParent: true }, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const parked = await client.sendMessage(message10('go') as never) as Task
    const again = await client.sendMessage(answer10('   ', parked) as never) as Task
    expect(again.status?.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(statusText(again)).to.match(/^Which file should I read\?\n\n\(The answer must be a non-empty string\.\)$/)
    expect(served.server.parkedTasks).to.equal(1)
    const done = await client.sendMessage(answer10('b.md', parked) as never) as Task
    expect(artifactText(done)).to.equal('read b.md')
  })

  it('CancelTask on a waiting task ends it canceled and disposes its agent; a later answer is refused as terminal', async () => {
    served = await serve({ askParent: true }, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const agents = watchAgents(served)
    const released = watchBuses(served)
    const parked = await client.sendMessage(message10('go') as never) as Task
    expect(released.live(parked.id), 'the SDK keeps the bus of a waiting task').to.equal(true)
    expect(agents).to.have.length(1)
    expect(agents[0].parked?.text).to.equal('Which file should I read?')
    const cancelled = await client.cancelTask({ tenant: '', id: parked.id, metadata: undefined } as never)
    expect(cancelled.status?.state).to.equal(TaskState.TASK_STATE_CANCELED)
    expect(served.server.parkedTasks).to.equal(0)
    const stored = await client.getTask({ tenant: '', id: parked.id, historyLength: 0 } as never)
    expect(stored.status?.state).to.equal(TaskState.TASK_STATE_CANCELED)
    const refused = await client.sendMessage(answer10('too late', parked) as never).then(() => undefined, (error: Error) => error)
    expect(refused?.message).to.match(/terminal state/)
    await until(() => agents[0].disposed, 'the parked agent was disposed')
    expect(released.live(parked.id), 'the bus of the cancelled task was released').to.equal(false)
  })

  it('parkedTimeout: an unanswered task is cancelled (the store says canceled) and its agent disposed', async () => {
    served = await serve({ askParent: true, parkedTimeout: 100 }, asker)
    const agents = watchAgents(served)
    const released = watchBuses(served)
    const client = await client10(served.server.url, bearer(served.server.token))
    const parked = await client.sendMessage(message10('go') as never) as Task
    await until(() => served.server.parkedTasks === 0, 'the parked task expired')
    await until(() => agents[0].disposed, 'the parked agent was disposed')
    expect(released.live(parked.id), 'the bus of the expired task was released').to.equal(false)
    const stored = await client.getTask({ tenant: '', id: parked.id, historyLength: 0 } as never)
    expect(stored.status?.state).to.equal(TaskState.TASK_STATE_CANCELED)
    expect(statusText(stored)).to.match(/no answer came within 100 ms \(parkedTimeout\)/)
  })

  it('maxParkedTasks: a turn that would park past it ends its task failed (TOO_MANY_PARKED); the waiting one still completes', async () => {
    served = await serve({ askParent: true, maxParkedTasks: 1 }, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const first = await client.sendMessage(message10('one') as never) as Task
    const second = await client.sendMessage(message10('two') as never) as Task
    expect(second.status?.state).to.equal(TaskState.TASK_STATE_FAILED)
    expect(statusText(second)).to.match(/1 tasks already wait for answers on this server \(maxParkedTasks\)/)
    expect((second.status?.message as unknown as { role: Role }).role).to.equal(Role.ROLE_AGENT)
    expect(served.server.parkedTasks).to.equal(1)
    const done = await client.sendMessage(answer10('c.md', first) as never) as Task
    expect(artifactText(done)).to.equal('read c.md')
  })

  it('an answer the agent refuses (its resume throws): the task fails with what it said, no update after it, and its agent is disposed', async () => {
    served = await serve({ askParent: true }, asker)
    const agents = watchAgents(served)
    const client = await client10(served.server.url, bearer(served.server.token))
    const parked = await client.sendMessage(message10('go') as never) as Task
    expect(parked.status?.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED)
    agents[0].resume = () => { throw new Error('the agent is busy') }
    const events = await drain(client.sendMessageStream(answer10('a.md', parked) as never))
    const last = events.at(-1)!
    expect(last.payload?.$case).to.equal('statusUpdate')
    const status = (last.payload as { value: { status: Task['status'] } }).value.status!
    expect(status.state).to.equal(TaskState.TASK_STATE_FAILED)
    expect(status.message?.parts[0]?.content).to.deep.include({ value: 'The served agent could not go on: the agent is busy' })
    expect(agents[0].disposed).to.equal(true)
    expect(served.server.parkedTasks).to.equal(0)
  })

  it('stopping the server disposes the agent of a waiting task', async () => {
    served = await serve({ askParent: true }, asker)
    const agents = watchAgents(served)
    const client = await client10(served.server.url, bearer(served.server.token))
    await client.sendMessage(message10('go') as never)
    expect(agents[0].parked).to.not.equal(undefined)
    await served.ctx.stop()
    expect(agents[0].disposed).to.equal(true)
  })

  it('without askParent the agent has no ask tool (a call to it is an unknown tool)', async () => {
    served = await serve({}, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const task = await client.sendMessage(message10('go') as never) as Task
    expect(task.status?.state).to.equal(TaskState.TASK_STATE_COMPLETED)
    expect(served.model.requests[0].tools.map((tool) => tool.name)).to.not.include('ask_parent')
  })
})
