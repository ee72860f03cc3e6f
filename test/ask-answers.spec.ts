// One question, one answer (issue 38, items 4 and 7), over real spawn children and the real
// subagent tool: whoever answers a child's question (its parent's tool call, the host or a page by
// run id, the parent's model), the waiting parent gets the child's result, and a second answer to
// the same question is refused ALREADY_ANSWERED.
import { expect } from 'chai'
import { type Agent, type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { startHost, type Host } from './support/host.js'
import { until } from './support/async.js'

/** The content of the newest tool message in a model request. */
function lastTool(request: GenerateRequest): string {
  const tools = request.messages.filter((message: Message) => message.role === 'tool')
  return tools.length ? String((tools.at(-1) as { content: unknown }).content) : ''
}

const toolContents = (request: GenerateRequest) =>
  request.messages.filter((message: Message) => message.role === 'tool').map((message) => String((message as { content: unknown }).content))

const hasTool = (request: GenerateRequest) => request.messages.some((message: Message) => message.role === 'tool')

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => { throw new Error('expected a rejection') }, (error: unknown) => error)
}

describe('one question, one answer: whoever answers, the waiting parent gets the result', () => {
  let host: Host
  let starts: SubagentRunInfo[]

  beforeEach(async () => {
    host = await startHost()
    starts = []
    host.ctx.on('subagent/start', (info) => { starts.push(info) })
  })
  afterEach(async () => { await host?.stop() })

  async function load(plugins: [unknown, Record<string, unknown>][]) {
    for (const [plugin, config] of plugins) host.ctx.plugin(plugin as never, config)
    await host.ctx.lifecycle.flush()
  }

  /** root → child (spawn) → grandchild (spawn-ask, asks "Which region?"), both tool loads escalate. */
  async function threeLevels() {
    const { ctx } = host
    const grand = new ScriptedModel((request) => hasTool(request)
      ? { text: `Deployed to ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which region?' } }] })
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Child relays: ${lastTool(request)}` }
      : { toolCalls: [{ name: 'deploy', input: { description: 'deploy it', prompt: 'Deploy the service.' } }] })
    const root = new ScriptedModel((request) => hasTool(request)
      ? { text: `Root done: ${lastTool(request)}` }
      : { toolCalls: [{ name: 'subagent', input: { description: 'ship it', prompt: 'Ship the release.' } }] })
    ctx.agents.registerModel('grand', grand)
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn' }],
      [Spawn, { name: 'spawn-ask', askParent: true }],
      [SubagentTool, { provider: 'spawn', questions: 'escalate', agentOptions: { model: 'child' } }],
      [SubagentTool, { provider: 'spawn-ask', toolName: 'deploy', nested: true, questions: 'escalate', agentOptions: { model: 'grand' } }],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const first = await agent.run('Release v2.')
    expect(first.stopReason).to.equal('pending')
    const [childRun, grandRun] = starts
    return { agent, grand, child, root, childRun, grandRun }
  }

  async function expectRootFinished(agent: Agent, continued: Promise<unknown>) {
    await until(() => agent.parked === undefined, 'the root went on with the answer')
    const done = await continued as Awaited<ReturnType<Agent['run']>>
    expect(done.stopReason).to.equal('completed')
    expect(done.text).to.equal('Root done: Child relays: Deployed to eu-west.')
    expect(agent.parked).to.equal(undefined)
    expect(host.ctx.subagents.pending()).to.deep.equal([])
    // The terminal's late answer to the same question: refused, with the code that says why.
    const late = await rejection(agent.resume('us-east'))
    expect(late).to.have.property('code', 'ALREADY_ANSWERED')
    expect((late as Error).message).to.match(/was answered already/)
    await until(() => host.ctx.subagents.runs().length === 0, 'every child was disposed')
  }

  it('escalate, three levels: an answer to the grandchild by run id continues every parked ancestor; the root\'s holder reads the result', async () => {
    const { ctx } = host
    const { agent, grand, child, root, childRun, grandRun } = await threeLevels()
    const continued = agent.nextResult()
    const next = ctx.subagents.resume(grandRun.runId, 'eu-west')
    // A second answer while the first is under way: the grandchild's and the child's question alike.
    expect(await rejection(ctx.subagents.resume(grandRun.runId, 'us-east'))).to.have.property('code', 'ALREADY_ANSWERED')
    expect(await rejection(ctx.subagents.resume(childRun.runId, 'us-east'))).to.have.property('code', 'ALREADY_ANSWERED')
    expect(await next).to.include({ stopReason: 'completed', output: 'Deployed to eu-west.' })
    await expectRootFinished(agent, continued)
    // The grandchild read the answer once; each level made exactly one more model call.
    expect(lastTool(grand.requests.at(-1)!)).to.equal('eu-west')
    expect([root.callCount, child.callCount, grand.callCount]).to.deep.equal([2, 2, 2])
    expect(starts).to.have.length(2)
  })

  it('escalate, three levels: an answer to the middle run by run id reaches the grandchild and the root goes on', async () => {
    const { ctx } = host
    const { agent, grand, child, root, childRun } = await threeLevels()
    const continued = agent.nextResult()
    const next = await ctx.subagents.resume(childRun.runId, 'eu-west')
    expect(next).to.include({ stopReason: 'completed', output: 'Child relays: Deployed to eu-west.' })
    await expectRootFinished(agent, continued)
    expect([root.callCount, child.callCount, grand.callCount]).to.deep.equal([2, 2, 2])
  })

  it('escalate: a root that asks another question first: an answer by run id to its other child reaches that call at once', async () => {
    const { ctx } = host
    const kid = new ScriptedModel((request) => {
      const answers = request.messages.filter((message: Message) => message.role === 'tool').map((message) => String(message.content))
      if (request.messages[0].content === 'Task A.') return answers.length ? { text: `A done ${answers[0]}` } : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which A?' } }] }
      if (answers.length < 2) return { toolCalls: [{ name: 'ask_parent', input: { question: answers.length ? 'And then?' : 'Which B?' } }] }
      return { text: `B done ${answers.join(' ')}` }
    })
    const root = new ScriptedModel((request) => hasTool(request) ? { text: toolContents(request).join(' | ') } : {
      toolCalls: [
        { name: 'subagent', input: { description: 'a', prompt: 'Task A.' } },
        { name: 'subagent', input: { description: 'b', prompt: 'Task B.' } },
      ],
    })
    ctx.agents.registerModel('kid', kid)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', questions: 'escalate', agentOptions: { model: 'kid' } }],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const first = await agent.run('Do both.')
    expect(first.question).to.include({ text: 'Which A?' })
    const b = starts.find((info) => info.label === 'b')!.runId
    expect(agent.waitingOn.map((question) => question.text)).to.deep.equal(['Which A?', 'Which B?'])
    // B is answered on the page (twice: it asks again); each answer reaches the root's call on B at
    // once, and the root parks again on what it still waits for, A's question first.
    const waits = () => agent.running ? [] : agent.waitingOn.map((question) => question.text)
    expect(await ctx.subagents.resume(b, 'x')).to.deep.include({ stopReason: 'pending' })
    await until(() => waits().join() === 'Which A?,And then?', 'the root waits on A and on B\'s second question')
    expect(await ctx.subagents.resume(b, 'y')).to.include({ stopReason: 'completed', output: 'B done x y' })
    await until(() => waits().join() === 'Which A?', 'the root waits on A only')
    expect(ctx.subagents.pending().map((parked) => parked.question.text)).to.deep.equal(['Which A?'])
    const done = await agent.resume('alpha')
    expect(done.stopReason).to.equal('completed')
    // Each call's result, in the order the calls were answered.
    expect(done.text).to.equal('B done x y | A done alpha')
    expect(kid.callCount).to.equal(5)
    await until(() => ctx.subagents.runs().length === 0, 'every child was disposed')
  })

  it('answer mode: a child answered by run id brings its result to the parent\'s turn; the parent\'s own reply is ALREADY_ANSWERED', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Painted it ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] })
    let handle = ''
    let delivered = ''
    const root = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'subagent', input: { description: 'paint', prompt: 'Paint the shed.' } }] }
      if (index === 1) {
        handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(lastTool(request))![1]
        // The person answers on the page while this model thinks.
        void ctx.subagents.resume(handle, 'blue')
        return { text: 'I will wait for the answer.' }
      }
      if (index === 2) {
        delivered = String(request.messages.at(-1)!.content)
        return { toolCalls: [{ name: 'subagent_reply', input: { handle, answer: 'red' } }] }
      }
      return { text: `Root: ${lastTool(request)}` }
    })
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', agentOptions: { model: 'child' } }],
      [SubagentControl, {}],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const result = await agent.run('Get the shed painted.')
    expect(result.stopReason).to.equal('completed')
    expect(delivered).to.include(`[Subagent ${handle}: its question "Which colour?" was answered by someone else`)
    // The child's result is quoted under our header: only the header starts a line.
    expect(delivered).to.match(/ follows\.\]\n\n> Painted it blue\.$/)
    expect(result.text).to.match(/^Root: The answer was not passed on\.\n\nALREADY_ANSWERED: The question q-\S+ \("Which colour\?"\) of run run-\S+ was answered already/)
    expect(child.callCount).to.equal(2)
    expect(lastTool(child.requests.at(-1)!)).to.equal('blue')
    await until(() => ctx.subagents.runs().length === 0, 'the child was disposed')
  })

  it('answer mode: the tool\'s timeout bounds a child answered by run id; the parent reads the timeout, not a hang', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      // After the answer the child never finishes on its own: only the cancel ends its turn.
      ? new Promise<never>((_, reject) => request.signal!.addEventListener('abort', () => reject(request.signal!.reason), { once: true }))
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] })
    let delivered = ''
    const root = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'subagent', input: { description: 'paint', prompt: 'Paint the shed.' } }] }
      if (index === 1) {
        const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(lastTool(request))![1]
        void ctx.subagents.resume(handle, 'blue')
        return { text: 'I will wait for the answer.' }
      }
      delivered = String(request.messages.at(-1)!.content)
      return { text: 'done' }
    })
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', timeout: 2000, agentOptions: { model: 'child' } }],
      [SubagentControl, {}],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    expect((await agent.run('Get the shed painted.')).stopReason).to.equal('completed')
    expect(delivered).to.include('was answered by someone else')
    expect(delivered).to.include('Its next result (a failure) follows.')
    expect(delivered).to.include('Subagent was stopped by a timeout.')
    expect(delivered).to.include('the subagent tool\'s timeout of 2000 ms elapsed after its question was answered')
    await until(() => ctx.subagents.runs().length === 0, 'the child was disposed')
  })

  it('reattach + escalate: two identical calls share one child and one question; one answer reaches both calls', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Deployed to ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which region?' } }] })
    const call = { name: 'subagent', input: { description: 'deploy', prompt: 'Deploy the service.' } }
    const root = new ScriptedModel((request) => hasTool(request) ? { text: toolContents(request).join(' | ') } : { toolCalls: [call, call] })
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', reattach: true, questions: 'escalate', agentOptions: { model: 'child' } }],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const first = await agent.run('Deploy it, twice over.')
    expect(first.stopReason).to.equal('pending')
    expect(first.question).to.include({ text: 'Which region?' })
    expect(starts).to.have.length(1)
    const done = await agent.resume('eu-west')
    // Asked once: the answer went to both calls, which both got the child's result.
    expect(done.stopReason).to.equal('completed')
    expect(done.text).to.equal('Deployed to eu-west. | Deployed to eu-west.')
    expect(child.callCount).to.equal(2)
    expect(root.callCount).to.equal(2)
    expect(ctx.subagents.pending()).to.deep.equal([])
    await until(() => ctx.subagents.runs().length === 0, 'the child was disposed')
  })

  it('reattach + answer mode: both calls show the one question; one reply answers it, a second is ALREADY_ANSWERED', async () => {
    const { ctx } = host
    const child = new ScriptedModel((request) => hasTool(request)
      ? { text: `Deployed to ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which region?' } }] })
    const call = { name: 'subagent', input: { description: 'deploy', prompt: 'Deploy the service.' } }
    let shown: string[] = []
    const root = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [call, call] }
      if (index === 1) {
        shown = toolContents(request)
        const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(shown[0])![1]
        return { toolCalls: [{ name: 'subagent_reply', input: { handle, answer: 'eu-west' } }] }
      }
      if (index === 2) {
        const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(shown[1])![1]
        return { toolCalls: [{ name: 'subagent_reply', input: { handle, answer: 'us-east' } }] }
      }
      return { text: toolContents(request).slice(2).join(' | ') }
    })
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    await load([
      [Spawn, { name: 'spawn', askParent: true }],
      [SubagentTool, { provider: 'spawn', reattach: true, agentOptions: { model: 'child' } }],
      [SubagentControl, {}],
    ])
    const agent = ctx.agents.create({ model: 'root' })
    const result = await agent.run('Deploy it, twice over.')
    expect(shown).to.have.length(2)
    for (const text of shown) expect(text).to.include('Which region?')
    const [reply, second] = result.text.split(' | ')
    expect(reply).to.equal('Deployed to eu-west.')
    expect(second).to.match(/^The answer was not passed on\.\n\nALREADY_ANSWERED: /)
    expect(child.callCount).to.equal(2)
    expect(starts).to.have.length(1)
    await until(() => ctx.subagents.runs().length === 0, 'the child was disposed')
  })
})
