import type { AddressInfo } from 'node:net'
import express from 'express'
import { type AgentCard, TaskState } from '@a2a-js/sdk'
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server'
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express'

/**
 * A bare A2A server built from the SDK's own classes (DefaultRequestHandler, its express handlers,
 * the in-memory task store) on 127.0.0.1: each task is "working", then one text artifact with
 * `answer(text)`, then "completed". The baseline the A2A rows compare against.
 */
export async function bareA2aServer(options: { name: string; streaming: boolean; answer: (text: string) => Promise<string> }) {
  const executor: AgentExecutor = {
    async execute(context, bus) {
      const { taskId, contextId } = context
      bus.publish(AgentEvent.task({
        id: taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
        artifacts: [], history: [], metadata: undefined,
      }))
      const part = context.userMessage.parts[0]?.content
      const value = await options.answer(part?.$case === 'text' ? part.value : '')
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: {
          artifactId: 'answer', name: '', description: '', metadata: undefined, extensions: [],
          parts: [{ content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: undefined }],
        },
      }))
      bus.publish(AgentEvent.statusUpdate({
        taskId, contextId, metadata: undefined,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
      }))
      bus.finished()
    },
    async cancelTask() {},
  }
  const app = express()
  const server = app.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  let connections = 0
  server.on('connection', () => { connections++ })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const card: AgentCard = {
    name: options.name, description: '', version: '1', provider: undefined,
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    capabilities: { streaming: options.streaming, pushNotifications: false, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], signatures: [],
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor)
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }))
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return {
    url,
    /** TCP connections the server has accepted so far. */
    get connections() { return connections },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}
