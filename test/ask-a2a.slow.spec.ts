// End to end over A2A: a parent in one cordis app delegates over provider-a2a to an agent served
// by serve-a2a in another app (its own Context, HTTP on 127.0.0.1). The served agent asks with
// ask_parent: its task goes input-required, the parent's tool call gets the question (escalate:
// the root's run returns pending; answer: the parent's model replies), the answer travels back as a
// message on the same task, and the served agent finishes. A2A 1.0, and 0.3 (the served app's 0.3
// card, relayed by a card-only server so the provider reads no 1.0 interface).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Context } from 'cordis'
import { expect } from 'chai'
import AgentRuntime, { type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import * as ProviderA2a from '@cordis-subagents/provider-a2a'
import A2aServer from '@cordis-subagents/serve-a2a'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { SubagentOutcome, SubagentRunInfo } from '@cordis-subagents/subagents-service'
import ToolRegistry from '@cordis-subagents/tools'
import { startHost, type Host } from './support/host.js'

const USAGE = { usage: { inputTokens: 10, outputTokens: 1 } }

function lastTool(request: GenerateRequest): string {
  const tools = request.messages.filter((message: Message) => message.role === 'tool')
  return tools.length ? String((tools.at(-1) as { content: unknown }).content) : ''
}

/** The served agent: asks which file, then reads back the answer. */
const served = () => new ScriptedModel((request) => lastTool(request)
  ? { text: `read ${lastTool(request)}` }
  : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which file should I read?' } }] }, USAGE)

interface Remote {
  ctx: Context
  model: ScriptedModel
  server: A2aServer
}

/** The serving app: tools, agents with the asking model, serve-a2a with `askParent`. */
async function startRemote(): Promise<Remote> {
  const ctx = new Context()
  const model = served()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'served' })
  ctx.plugin({ name: 'served-model', inject: ['agents'], apply: (ctx: Context) => { ctx.agents.registerModel('served', model) } })
  ctx.plugin(A2aServer, { askParent: true, name: 'asking agent' })
  await ctx.start()
  await ctx.lifecycle.flush()
  return { ctx, model, server: ctx.a2aServer }
}

/**
 * A card-only server on 127.0.0.1 relaying the remote's A2A 0.3 card (what a 0.3 client is served)
 * without its `supportedInterfaces`, so the provider finds only the 0.3 endpoint (a 0.3-only peer).
 */
async function relay03Card(remote: Remote): Promise<{ url: string; close(): Promise<void> }> {
  const full = await (await fetch(remote.server.cardUrl, { headers: { Accept: 'application/json' } })).json() as Record<string, unknown>
  expect(full.protocolVersion).to.equal('0.3')
  const { supportedInterfaces: _offered, ...card } = full
  const server: Server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify(card))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/.well-known/agent-card.json`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}

for (const version of ['1.0', '0.3'] as const) {
  describe(`ask over A2A ${version}: a served agent's input-required reaches the parent and the answer goes back`, function () {
    this.timeout(30_000)
    let host: Host
    let remote: Remote
    let card: { url: string; close(): Promise<void> } | undefined
    let starts: SubagentRunInfo[]
    let ends: SubagentOutcome[]

    beforeEach(async () => {
      remote = await startRemote()
      card = version === '0.3' ? await relay03Card(remote) : undefined
      host = await startHost()
      starts = []
      ends = []
      host.ctx.on('subagent/start', (info) => { starts.push(info) })
      host.ctx.on('subagent/end', (_info, outcome) => { ends.push(outcome) })
    })
    afterEach(async () => {
      await host?.stop()
      await remote?.ctx.stop()
      await card?.close()
      expect(remote.server.parkedTasks, 'no task is left waiting on the remote').to.equal(0)
    })

    async function load(questions: 'escalate' | 'answer') {
      host.ctx.plugin(ProviderA2a, {
        name: 'remote', url: card?.url ?? remote.server.url, bearerToken: remote.server.token,
        // The relayed 0.3 card is on another port than the agent it names.
        ...card ? { allowCrossOrigin: true } : {},
      })
      host.ctx.plugin(SubagentTool, { provider: 'remote', toolName: 'subagent_remote', questions })
      if (questions === 'answer') host.ctx.plugin(SubagentControl, {})
      await host.ctx.lifecycle.flush()
      const provider = host.ctx.subagents.get('remote') as unknown as { protocol: string } | undefined
      expect(provider?.protocol, 'the provider speaks the version under test').to.equal(version)
    }

    it('escalate: the root returns pending with the remote question; root.resume(answer) reaches the served agent → completed', async () => {
      const root = new ScriptedModel((request) => lastTool(request)
        ? { text: `Root: ${lastTool(request)}` }
        : { toolCalls: [{ name: 'subagent_remote', input: { description: 'read it', prompt: 'Read the file the user means.' } }] }, USAGE)
      host.ctx.agents.registerModel('root', root)
      await load('escalate')
      const agent = host.ctx.agents.create({ model: 'root' })
      const first = await agent.run('Go.')
      expect(first.stopReason, first.diagnostic).to.equal('pending')
      expect(starts).to.have.length(1)
      expect(first.question).to.deep.include({ kind: 'input-required', text: 'Which file should I read?', path: [starts[0].runId] })
      expect(remote.server.parkedTasks).to.equal(1)
      expect(host.ctx.subagents.pending().map((parked) => parked.runId)).to.deep.equal([starts[0].runId])
      expect(ends).to.deep.equal([])

      const done = await agent.resume('notes.txt')
      expect(done.stopReason, done.diagnostic).to.equal('completed')
      expect(done.text).to.equal('Root: read notes.txt')
      // The served agent's model saw the answer as its ask tool's result, in the same task's transcript.
      expect(remote.model.requests).to.have.length(2)
      expect(remote.model.requests[1].messages.at(-1)).to.deep.include({ role: 'tool', name: 'ask_parent', content: 'notes.txt' })
      expect(remote.server.parkedTasks).to.equal(0)
      expect(ends.map((outcome) => outcome.stopReason)).to.deep.equal(['completed'])
      expect(ends[0].output).to.equal('read notes.txt')
      // One delegation: the answer continued the same run and task.
      expect(starts).to.have.length(1)
      expect(host.ctx.subagents.runs()).to.deep.equal([])
      expect(host.ctx.subagents.pending()).to.deep.equal([])
    })

    it('answer: the parent\'s model reads the remote question in the tool result and answers it with subagent_reply', async () => {
      let asked = ''
      const root = new ScriptedModel((request, index) => {
        if (index === 0) return { toolCalls: [{ name: 'subagent_remote', input: { description: 'read it', prompt: 'Read the file the user means.' } }] }
        if (index === 1) {
          asked = lastTool(request)
          const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(asked)![1]
          return { toolCalls: [{ name: 'subagent_reply', input: { handle, answer: 'README.md' } }] }
        }
        return { text: `Root: ${lastTool(request)}` }
      })
      host.ctx.agents.registerModel('root', root)
      await load('answer')
      const agent = host.ctx.agents.create({ model: 'root' })
      const result = await agent.run('Go.')
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(asked).to.include('Which file should I read?')
      expect(result.text).to.equal('Root: read README.md')
      expect(starts).to.have.length(1)
      expect(ends.map((outcome) => outcome.stopReason)).to.deep.equal(['completed'])
      expect(remote.server.parkedTasks).to.equal(0)
    })
  })
}
