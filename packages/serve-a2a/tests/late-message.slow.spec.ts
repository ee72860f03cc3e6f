// A message the SDK read while its task still waited for an answer, that reaches the executor after a cancel or another
// answer ended the task: the task stays as it ended (its final state and message), and the cancel is not refused.
// Both calls go to the server's own request handler in one tick, the only way to put them in that window.
import { expect } from 'chai'
import { type Task, TaskState } from '@a2a-js/sdk'
import { DefaultRequestHandler, type ServerCallContext } from '@a2a-js/sdk/server'
import { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { bearer, client10, message10, serve, type Served } from './helpers.js'

async function asker(request: GenerateRequest): Promise<ScriptedResponse> {
  const last = request.messages.at(-1)!
  if (last.role !== 'tool') return ScriptedModel.call('ask_parent', { question: 'Which file?' })
  return ScriptedModel.text(`read ${last.content}`)
}

function answer(text: string, task: Task) {
  const params = message10(text)
  return { ...params, message: { ...params.message, taskId: task.id, contextId: task.contextId } }
}

interface Handler {
  sendMessage(params: unknown, context: ServerCallContext): Promise<Task>
  cancelTask(params: unknown, context: ServerCallContext): Promise<Task>
}

describe('serve-a2a: a message that comes late to a task that just ended', function () {
  this.timeout(30_000)
  let served: Served | undefined
  const original = DefaultRequestHandler.prototype.sendMessage
  let seen: { handler: Handler; context: ServerCallContext } | undefined
  before(() => {
    // The server's own handler and a caller context of the client's, as the HTTP layer made them.
    DefaultRequestHandler.prototype.sendMessage = function (this: Handler, params: never, context: ServerCallContext) {
      seen = { handler: this, context }
      return original.call(this, params, context)
    }
  })
  after(() => {
    DefaultRequestHandler.prototype.sendMessage = original
  })
  afterEach(async () => {
    await served?.ctx.stop()
    served = undefined
  })

  async function parkedTask(): Promise<{ task: Task; handler: Handler; context: ServerCallContext; get: () => Promise<Task> }> {
    served ??= await serve({ askParent: true }, asker)
    const client = await client10(served.server.url, bearer(served.server.token))
    const task = await client.sendMessage(message10('read') as never) as Task
    expect(task.status?.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED)
    return { task, ...seen!, get: async () => await client.getTask({ id: task.id } as never) as Task }
  }

  it('an answer and a cancel in one tick: the task ends canceled, both calls say so, the cancel is not refused', async () => {
    for (let round = 0; round < 5; round++) {
      const { task, handler, context, get } = await parkedTask()
      const [answered, cancelled] = await Promise.all([
        handler.sendMessage(answer('x.txt', task), context), handler.cancelTask({ id: task.id, tenant: '' }, context),
      ])
      expect(cancelled.status?.state, `round ${round}: the cancel`).to.equal(TaskState.TASK_STATE_CANCELED)
      expect(answered.status?.state, `round ${round}: the late answer`).to.equal(TaskState.TASK_STATE_CANCELED)
      const final = await get()
      expect(final.status?.state, `round ${round}: the task`).to.equal(TaskState.TASK_STATE_CANCELED)
      expect(JSON.stringify(final.status?.message)).to.include('cancelled by the client')
      expect(served!.server.parkedTasks).to.equal(0)
    }
  })

  it('two answers, the second read before the first ended the task: the task stays completed with the first answer\'s result', async () => {
    for (let round = 0; round < 3; round++) {
      const { task, handler, context, get } = await parkedTask()
      const first = handler.sendMessage(answer('x.txt', task), context)
      // Read by the SDK while the task still waits, executed once the first answer's turn has ended.
      for (let i = 0; i < 40; i++) await null
      const second = handler.sendMessage(answer('y.txt', task), context)
      const [one, two] = await Promise.all([first, second])
      expect(one.status?.state).to.equal(TaskState.TASK_STATE_COMPLETED)
      expect(two.status?.state, `round ${round}: the late answer`).to.equal(TaskState.TASK_STATE_COMPLETED)
      const final = await get()
      expect(final.status?.state, `round ${round}: the task`).to.equal(TaskState.TASK_STATE_COMPLETED)
      expect(JSON.stringify(final.artifacts)).to.include('read x.txt')
    }
  })
})
