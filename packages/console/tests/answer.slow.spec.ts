// The answer box: a child parked on a question shows it in the live view, and POST
// /api/runs/:id/answer resumes it through ctx.subagents.resume, behind the same token, Host and
// Origin checks as cancel and send. The child is a fixture provider that asks one question.
import { expect } from 'chai'
import type { GenerateRequest, Message } from '@cordis-subagents/agent'
import * as ProviderSpawn from '@cordis-subagents/provider-spawn'
import { deferred } from '@cordis-subagents/shared'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { SubagentProvider, SubagentResult } from '@cordis-subagents/subagents-service'
import type { NodeView } from '@cordis-subagents/console'
import { bearer, call, consoleHost, eventually } from './helpers.js'

type Host = Awaited<ReturnType<typeof consoleHost>>

/** A child that asks "Which colour?" and finishes with the answer it gets. */
function asker(): SubagentProvider & { answers: string[] } {
  const answers: string[] = []
  return {
    name: 'asker',
    answers,
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    async start(request) {
      return {
        id: request.runId,
        result: Promise.resolve<SubagentResult>({
          stopReason: 'pending', output: '', question: { id: 'q-1', kind: 'permission', text: 'Which colour?', path: [], options: [{ id: 'b', name: 'blue' }] },
        }),
        cancel: () => {},
        dispose: async () => {},
        resume: async (answer) => {
          answers.push(answer)
          return { stopReason: 'completed', output: `painted ${answer}` }
        },
      }
    },
  }
}

describe('console: answering a parked child from the page', function () {
  this.timeout(20_000)
  let host: Host | undefined
  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  const snapshot = async () => JSON.parse((await call(host!.view.port, '/api/snapshot', { headers: bearer(host!.view.token) })).body) as { nodes: NodeView[] }
  const post = (path: string, body: unknown, headers: Record<string, string> = bearer(host!.view.token)) =>
    call(host!.view.port, path, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) })

  it('shows the question with an answer box; the answer resumes the run, which then ends with it', async () => {
    host = await consoleHost(() => ({ text: 'unused' }))
    const provider = asker()
    host.ctx.subagents.register(provider)
    const parent = host.ctx.agents.create()
    const run = await host.ctx.subagents.delegate('asker', { prompt: 'paint', label: 'painter', parent, signal: new AbortController().signal })
    expect((await run.result).stopReason).to.equal('pending')
    await eventually(async () => (await snapshot()).nodes[1]?.can.answer === true, 'the answer box offered')
    const child = (await snapshot()).nodes[1]
    expect(child.question).to.deep.equal({ id: 'q-1', kind: 'permission', text: 'Which colour?', path: [], options: [{ id: 'b', name: 'blue' }] })
    expect(child.can).to.deep.equal({ cancel: true, send: false, answer: true })

    expect((await post(`/api/runs/${child.runId}/answer`, { answer: '' })).status).to.equal(400)
    const unauthenticated = await post(`/api/runs/${child.runId}/answer`, { answer: 'blue' }, {})
    expect(unauthenticated.status).to.equal(401)
    const foreign = await post(`/api/runs/${child.runId}/answer`, { answer: 'blue' }, { ...bearer(host.view.token), origin: 'http://evil.example' })
    expect(foreign.status).to.equal(403)
    expect(provider.answers, 'no refused request reached the child').to.deep.equal([])

    const reply = await post(`/api/runs/${child.runId}/answer`, { answer: 'blue' })
    expect(reply.status).to.equal(200)
    await eventually(async () => (await snapshot()).nodes[1].state === 'ended', 'the answered child ended')
    expect(provider.answers).to.deep.equal(['blue'])
    const ended = (await snapshot()).nodes[1]
    expect(ended).to.include({ stopReason: 'completed', output: 'painted blue' })
    expect(ended.question).to.equal(undefined)
    const again = await post(`/api/runs/${child.runId}/answer`, { answer: 'red' })
    expect(JSON.parse(again.body).error.code).to.equal('NOT_RUNNING')
    await run.dispose()
  })

  it('a running child that asked nothing is NOT_PARKED, and offers no answer box', async () => {
    host = await consoleHost(() => ({ text: 'unused' }))
    host.ctx.subagents.register({
      name: 'busy',
      capabilities: { persona: false, toolFilter: false, depthLimit: false },
      inheritsParentContext: false,
      async start(request) {
        let finish!: (result: SubagentResult) => void
        const result = new Promise<SubagentResult>((resolve) => finish = resolve)
        return { id: request.runId, result, cancel: () => finish({ stopReason: 'aborted', output: '' }), dispose: async () => {} }
      },
    })
    const run = await host.ctx.subagents.delegate('busy', { prompt: 'work', parent: host.ctx.agents.create(), signal: new AbortController().signal })
    const child = (await snapshot()).nodes[1]
    expect(child.can.answer).to.equal(false)
    const reply = await post(`/api/runs/${child.runId}/answer`, { answer: 'blue' })
    expect(reply.status).to.equal(409)
    expect(JSON.parse(reply.body).error.code).to.equal('NOT_PARKED')
    run.cancel()
    await run.dispose()
  })

  it('an answer from the page reaches the root parked on it: its node goes on (one root), and a second answer is ALREADY_ANSWERED', async () => {
    const gate = deferred<void>()
    const results = (request: GenerateRequest) => request.messages.filter((m: Message) => m.role === 'tool').map((m) => String(m.content))
    host = await consoleHost(((request: GenerateRequest) => {
      const [answer] = results(request)
      if (request.messages[0]?.content === 'Paint the shed.') {
        // The child works on its answer until the test opens the gate.
        return answer === undefined ? { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] } : gate.promise.then(() => ({ text: `painted ${answer}` }))
      }
      return answer === undefined ? { toolCalls: [{ name: 'ask_child', input: { description: 'paint', prompt: 'Paint the shed.' } }] } : { text: `Root: ${answer}` }
    }) as never)
    host.ctx.plugin(ProviderSpawn, { name: 'spawn-ask', askParent: true })
    host.ctx.plugin(SubagentTool, { provider: 'spawn-ask', toolName: 'ask_child', questions: 'escalate' })
    await host.ctx.lifecycle.flush()
    const agent = host.ctx.agents.create({ label: 'main' })
    expect((await agent.run('Get the shed painted.')).stopReason).to.equal('pending')
    const continued = agent.nextResult()
    await eventually(async () => (await snapshot()).nodes.some((node) => node.can.answer), 'the answer box offered')
    const child = (await snapshot()).nodes.find((node) => node.can.answer)!
    expect((await post(`/api/runs/${child.runId}/answer`, { answer: 'blue' })).status).to.equal(200)
    const again = await post(`/api/runs/${child.runId}/answer`, { answer: 'red' })
    expect(again.status).to.equal(409)
    expect(JSON.parse(again.body).error.code).to.equal('ALREADY_ANSWERED')
    gate.resolve()
    const done = await continued
    expect(done).to.include({ stopReason: 'completed', text: 'Root: painted blue' })
    await eventually(async () => (await snapshot()).nodes.every((node) => node.state === 'ended'), 'the tree ended')
    const roots = (await snapshot()).nodes.filter((node) => node.transport === 'root')
    expect(roots.map((node) => [node.label, node.stopReason])).to.deep.equal([['main', 'completed']])
  })
})
