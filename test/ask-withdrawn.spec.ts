// Escalate mode after a child's parked run ends without an answer (issue 38, between items 4/7
// and 8): the grandchild's question is withdrawn level by level, over real spawn children and the
// real subagent tool. Each escalated ancestor's suspended call gets the child's final outcome (its
// `timeout` or `aborted` result), the root's holder reads the continued turn with `nextResult()`,
// and nothing lists the dead question any more. Answer mode keeps its inbox note.
import { expect } from 'chai'
import { z } from 'zod'
import { type Agent, type GenerateRequest, type Message, type RunResult, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { SubagentOutcome, SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { startHost, type Host } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'

const hasTool = (request: GenerateRequest) => request.messages.some((message: Message) => message.role === 'tool')

/** The content of the newest tool message in a model request. */
function lastTool(request: GenerateRequest): string {
  const tools = request.messages.filter((message: Message) => message.role === 'tool')
  return tools.length ? String((tools.at(-1) as { content: unknown }).content) : ''
}

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => { throw new Error('expected a rejection') }, (error: unknown) => error)
}

/** Every tool call of `messages` has exactly one result, after it. */
function expectBalanced(messages: readonly Message[]): void {
  const open = new Set<string>()
  for (const message of messages) {
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) open.add(call.id)
    if (message.role === 'tool') expect(open.delete(message.toolCallId), `one result for call ${message.toolCallId}`).to.equal(true)
  }
  expect([...open]).to.deep.equal([])
}

describe('escalate: a question nobody can answer any more is withdrawn up to the root', () => {
  let host: Host
  let starts: SubagentRunInfo[]
  let ends: Map<string, SubagentOutcome>

  beforeEach(async () => {
    host = await startHost()
    starts = []
    ends = new Map()
    host.ctx.on('subagent/start', (info) => { starts.push(info) })
    host.ctx.on('subagent/end', (info, outcome) => { ends.set(info.runId, outcome) })
  })
  afterEach(async () => { await host?.stop() })

  interface Tree {
    /** The middle's deploy tool (default escalate). */
    grandQuestions?: 'escalate' | 'answer'
    /** The root's subagent tool (default escalate). */
    rootQuestions?: 'escalate' | 'answer'
    middle?: ScriptedModel
    top?: ScriptedModel
  }

  /** root → middle (spawn) → grandchild (spawn-ask, asks "Which region?"). */
  async function threeLevels(maxParkedMs: number, tree: Tree = {}) {
    const { ctx } = host
    const grand = new ScriptedModel((request) => hasTool(request)
      ? { text: `Deployed to ${lastTool(request)}.` }
      : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which region?' } }] })
    const child = tree.middle ?? new ScriptedModel((request) => hasTool(request)
      ? { text: `Child relays: ${lastTool(request)}` }
      : { toolCalls: [{ name: 'deploy', input: { description: 'deploy it', prompt: 'Deploy the service.' } }] })
    const root = tree.top ?? new ScriptedModel((request) => hasTool(request)
      ? { text: `Root done: ${lastTool(request)}` }
      : { toolCalls: [{ name: 'subagent', input: { description: 'ship it', prompt: 'Ship the release.' } }] })
    ctx.agents.registerModel('grand', grand)
    ctx.agents.registerModel('child', child)
    ctx.agents.registerModel('root', root)
    ctx.plugin(Spawn as never, { name: 'spawn' })
    ctx.plugin(Spawn as never, { name: 'spawn-ask', askParent: true, maxParkedMs })
    const { rootQuestions = 'escalate', grandQuestions = 'escalate' } = tree
    ctx.plugin(SubagentTool as never, { provider: 'spawn', questions: rootQuestions, agentOptions: { model: 'child' } })
    ctx.plugin(SubagentTool as never, { provider: 'spawn-ask', toolName: 'deploy', nested: true, questions: grandQuestions, agentOptions: { model: 'grand' } })
    await ctx.lifecycle.flush()
    const agent = ctx.agents.create({ model: 'root' })
    return { agent, grand, child, root }
  }

  /** The root parked on the grandchild's question, as its holder sees it. */
  async function parkedRoot(agent: Agent) {
    const first = await agent.run('Release v2.')
    expect(first.stopReason).to.equal('pending')
    expect(first.question).to.include({ text: 'Which region?' })
    const [middleRun, grandRun] = starts
    expect(host.ctx.subagents.pending().map((parked) => parked.runId)).to.have.members([middleRun.runId, grandRun.runId])
    expect(agent.waitingOn.map((question) => question.id)).to.deep.equal([first.question!.id])
    return { question: first.question!, middleRun, grandRun }
  }

  /** The root's holder reads the continued turn; bounded, so a root left parked fails here, not at the mocha timeout. */
  async function continuedTurn(agent: Agent, next: Promise<RunResult>): Promise<RunResult> {
    let done: RunResult | undefined
    void next.then((result) => { done = result })
    await waitFor(() => done !== undefined, 'the root to go on after its grandchild ended')
    return done!
  }

  async function expectNothingWaits(agent: Agent, questionId: string) {
    expect(agent.parked).to.equal(undefined)
    expect(agent.waitingOn).to.deep.equal([])
    expect(host.ctx.subagents.pending()).to.deep.equal([])
    // The root's holder (a terminal) answers late: refused, and nothing reaches the ended question.
    const late = await rejection(agent.resume('eu-west', { questionId }))
    expect(late).to.have.property('code', 'NOT_PARKED')
    expect((late as Error).message).to.match(/was withdrawn/)
    expectBalanced(agent.transcript.messages)
    await waitFor(() => host.ctx.subagents.runs().length === 0, 'every child was disposed')
  }

  it('expiry of the grandchild\'s question: the middle and the root go on, the root\'s model sees the timeout, pending() is empty', async () => {
    const { agent, grand, child, root } = await threeLevels(100)
    const { question, middleRun, grandRun } = await parkedRoot(agent)
    const done = await continuedTurn(agent, agent.nextResult())

    expect(ends.get(grandRun.runId)?.stopReason).to.equal('timeout')
    expect(ends.get(middleRun.runId)?.stopReason).to.equal('completed')
    expect(done.stopReason).to.equal('completed')
    // The middle's call got the grandchild's timeout result (headline, diagnostic); the root's model read it relayed.
    const middleSaw = lastTool(child.requests.at(-1)!)
    expect(middleSaw).to.match(/^Subagent was stopped by a timeout\./)
    expect(middleSaw).to.include('The child waited maxParkedMs (100 ms) for an answer to its question "Which region?"')
    expect(lastTool(root.requests.at(-1)!)).to.equal(`Child relays: ${middleSaw}`)
    expect(done.text).to.equal(`Root done: Child relays: ${middleSaw}`)
    // Nobody answered: the grandchild ran once; each ancestor made one more model call.
    expect([root.callCount, child.callCount, grand.callCount]).to.deep.equal([2, 2, 1])
    await expectNothingWaits(agent, question.id)
  })

  it('a host cancel of the parked grandchild: the middle and the root go on with its aborted result', async () => {
    const { agent, grand, child, root } = await threeLevels(3_600_000)
    const { question, middleRun, grandRun } = await parkedRoot(agent)
    const next = agent.nextResult()
    expect(host.ctx.subagents.cancel(grandRun.runId, 'the release was called off')).to.equal(true)
    const done = await continuedTurn(agent, next)

    expect(ends.get(grandRun.runId)?.stopReason).to.equal('aborted')
    expect(ends.get(middleRun.runId)?.stopReason).to.equal('completed')
    const middleSaw = lastTool(child.requests.at(-1)!)
    expect(middleSaw).to.match(/^Subagent was aborted before it finished\./)
    expect(middleSaw).to.include('the release was called off')
    expect(lastTool(root.requests.at(-1)!)).to.equal(`Child relays: ${middleSaw}`)
    expect(done.text).to.equal(`Root done: Child relays: ${middleSaw}`)
    expect([root.callCount, child.callCount, grand.callCount]).to.deep.equal([2, 2, 1])
    await expectNothingWaits(agent, question.id)
  })

  it('a root in answer mode: its model reads the middle\'s next result as a message, headed that the question was withdrawn', async () => {
    const { ctx } = host
    // The root's model reads the question, then works on until the middle ended (the grandchild's end withdrew its question).
    ctx.tools.register({
      name: 'work_on', description: 'other work', input: z.strictObject({}),
      execute: async () => {
        await waitFor(() => starts.length === 2 && ends.has(starts[0].runId), 'the middle ended')
        return { content: 'worked' }
      },
    })
    let read: GenerateRequest | undefined
    const root = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'subagent', input: { description: 'ship it', prompt: 'Ship the release.' } }] }
      if (index === 1) return { toolCalls: [{ name: 'work_on', input: {} }] }
      if (String(request.messages.at(-1)!.content).startsWith('[Subagent')) read = request
      return { text: 'Root: noted.' }
    })
    // The root's load answers (its model replies with subagent_reply); the middle's deploy escalates.
    ctx.plugin(SubagentControl as never, {})
    const { agent } = await threeLevels(100, { rootQuestions: 'answer', top: root })
    const result = await agent.run('Release v2.')
    expect(result.stopReason).to.equal('completed')
    const message = String(read!.messages.at(-1)!.content)
    expect(message).to.match(/^\[Subagent run-\S+: its question "Which region\?" was withdrawn \(whoever asked it ended without an answer/)
    expect(message).to.include('\n\n> Child relays: Subagent was stopped by a timeout.')
    expect(ctx.subagents.pending()).to.deep.equal([])
    await waitFor(() => ctx.subagents.runs().length === 0, 'every child was disposed')
  })

  it('answer mode is unchanged: the middle\'s model had the question, and reads the expiry as the inbox note', async () => {
    const { ctx } = host
    // The middle's model reads the question, then works on until the grandchild ended (a tool that returns after it).
    ctx.tools.register({
      name: 'work_on', description: 'other work', input: z.strictObject({}),
      execute: async () => {
        await waitFor(() => starts.length === 2 && ends.has(starts[1].runId), 'the grandchild ended')
        return { content: 'worked' }
      },
    })
    let read: GenerateRequest | undefined
    const middle = new ScriptedModel((request, index) => {
      if (index === 0) return { toolCalls: [{ name: 'deploy', input: { description: 'deploy it', prompt: 'Deploy the service.' } }] }
      if (index === 1) return { toolCalls: [{ name: 'work_on', input: {} }] }
      read = request
      return { text: 'Middle: noted.' }
    })
    // The middle can answer (subagent_reply), so its deploy tool gives its model the question.
    ctx.plugin(SubagentControl as never, { nested: true })
    const { agent } = await threeLevels(100, { grandQuestions: 'answer', middle })
    const result = await agent.run('Release v2.')
    // Nothing parked above the middle: the root's turn ran through.
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('Root done: Middle: noted.')
    expect(ends.get(starts[1].runId)?.stopReason).to.equal('timeout')
    const notes = read!.messages.filter((message) => message.role === 'user' && String(message.content).startsWith('Subagent run-'))
    expect(notes).to.have.length(1)
    expect(String(notes[0].content)).to.match(/^Subagent run-\S+ \("deploy it"\) ended timeout while it waited for your answer; it takes no answer any more\./)
    expect(ctx.subagents.pending()).to.deep.equal([])
    await waitFor(() => ctx.subagents.runs().length === 0, 'every child was disposed')
  })
})
