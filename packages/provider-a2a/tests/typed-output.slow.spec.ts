// Typed results over A2A, against a server of this spec's own on the SDK's server classes
// (127.0.0.1): the remote is asked for JSON in its prompt; its answer is a data part (preferred)
// or text parsed as JSON, validated on return. No correction round for a remote child.
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { expect } from 'chai'
import express from 'express'
import { type AgentCard, type Part, Role, TaskState } from '@a2a-js/sdk'
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server'
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express'
import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { provider, request, within } from './helpers.js'

const SCHEMA = { type: 'object', properties: { answer: { type: 'string' }, score: { type: 'integer' } }, required: ['answer', 'score'] }

const text = (value: string): Part => ({ content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: undefined })
const data = (value: Record<string, unknown>): Part => ({ content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: undefined })

/** The answer's parts, by the first word of the prompt. */
const ANSWERS: Record<string, Part[]> = {
  'data-good': [text('Here is the result.'), data({ answer: '42', score: 9 })],
  'text-good': [text('```json\n{"answer": "42", "score": 9}\n```')],
  'data-bad': [data({ answer: 42, score: 9 })],
  'text-bad': [text('The answer is 42.')],
}

async function startServer(prompts: string[]): Promise<{ url: string; close(): Promise<void> }> {
  const executor: AgentExecutor = {
    async execute(context, bus) {
      const { taskId, contextId } = context
      const prompt = context.userMessage.parts.map((part) => part.content?.$case === 'text' ? part.content.value : '').join('')
      prompts.push(prompt)
      bus.publish(AgentEvent.task({
        id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [], history: [], metadata: undefined,
      }))
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: 'answer', name: 'answer', description: '', parts: ANSWERS[prompt.split(/\s/)[0]!]!, metadata: undefined, extensions: [] },
      }))
      bus.publish(AgentEvent.statusUpdate({
        taskId, contextId, metadata: undefined,
        status: {
          state: TaskState.TASK_STATE_COMPLETED, timestamp: new Date().toISOString(),
          message: { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [text('done')], metadata: undefined, extensions: [], referenceTaskIds: [] },
        },
      }))
      bus.finished()
    },
    async cancelTask() {},
  }
  const app = express()
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const card: AgentCard = {
    name: 'typed agent', description: 'Answers with JSON.', version: '1.0.0',
    supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain', 'application/json'],
    skills: [], signatures: [],
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor)
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }))
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}

describe('provider-a2a: typed results', function () {
  this.timeout(20_000)
  let server: Awaited<ReturnType<typeof startServer>>
  let prompts: string[]

  beforeEach(async () => {
    prompts = []
    server = await startServer(prompts)
  })
  afterEach(() => server.close())

  async function run(prompt: string): Promise<SubagentResult> {
    const remote = await provider(server.url)
    const handle = await within(remote.start(request({ prompt, output: { schema: SCHEMA } })), 10_000, 'start')
    const result = await within(handle.result, 10_000, 'result')
    await within(handle.dispose(), 10_000, 'dispose')
    return result
  }

  it('a data part that validates is the value (its JSON the output); the prompt asked for the schema', async () => {
    const result = await run('data-good')
    expect(result).to.deep.include({ stopReason: 'completed', value: { answer: '42', score: 9 }, output: '{"answer":"42","score":9}' })
    expect(prompts[0]).to.include('data-good').and.include(JSON.stringify(SCHEMA))
  })

  it('no data part: the text is parsed as JSON (a fenced block is fine) and validated', async () => {
    const result = await run('text-good')
    expect(result).to.deep.include({ stopReason: 'completed', value: { answer: '42', score: 9 } })
  })

  it('a data part that does not validate ends invalid_output at once, quoting the validation error', async () => {
    const result = await run('data-bad')
    expect(result.stopReason).to.equal('invalid_output')
    expect(result).to.not.have.property('value')
    expect(result.diagnostic).to.include('no correction round').and.include('/answer must be string')
    expect(prompts).to.have.length(1)
  })

  it('text that is not JSON ends invalid_output saying so', async () => {
    const result = await run('text-bad')
    expect(result.stopReason).to.equal('invalid_output')
    expect(result.diagnostic).to.include('not JSON')
  })
})
