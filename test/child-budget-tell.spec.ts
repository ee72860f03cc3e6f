// Issue 44 items 3 and 5 over real spawn children: a child that sees its budget (`budgetNote`) and one
// that tells its parent something without stopping (`tellParent`), from the subagent tool's config.
import { expect } from 'chai'
import { z } from 'zod'
import { DEFAULT_TELL_LENGTH, DEFAULT_TELLS, type GenerateRequest, ScriptedModel, type ScriptedResponse, WRAP_UP_HINT } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { startHost, type Host } from './support/host.js'

const isChild = (request: GenerateRequest) => (request.system ?? '').includes('You are a subagent')
const texts = (request: GenerateRequest) => [request.system ?? '', ...request.messages.map((message) => message.content)].join('\n')
const delegate = { name: 'subagent', input: { description: 'count', prompt: 'Count to four.' } }

interface Tree {
  host: Host
  parent: GenerateRequest[]
  child: GenerateRequest[]
}

/** A host with spawn and a subagent tool of `config`; `child` scripts the child's model, the parent delegates once then answers. */
type ChildScript = (request: GenerateRequest, step: number) => ScriptedResponse | Promise<ScriptedResponse>

async function tree(config: Record<string, unknown>, child: ChildScript): Promise<Tree> {
  const host = await startHost({
    before(ctx) {
      ctx.plugin(Spawn, { name: 'spawn' })
      ctx.plugin(SubagentTool, { provider: 'spawn', ...config })
    },
  })
  const seen: Tree = { host, parent: [], child: [] }
  host.ctx.tools.register({ name: 'noop', description: 'does nothing', input: z.strictObject({}), execute: () => ({ content: 'ok' }) })
  host.ctx.agents.registerModel('m', new ScriptedModel((request: GenerateRequest) => {
    if (isChild(request)) {
      seen.child.push(request)
      return child(request, seen.child.length - 1)
    }
    seen.parent.push(request)
    return seen.parent.length === 1 ? { toolCalls: [delegate] } : { text: 'parent done' }
  }))
  return seen
}

describe('a child sees its budget; a child tells its parent without stopping (spawn)', () => {
  let seen: Tree | undefined
  afterEach(async () => { await seen?.host.stop(); seen = undefined })

  it('budgetNote: one current note per child request, updated each step, with a wrap-up hint near the limit; never in the parent', async () => {
    seen = await tree({ budgetNote: true, budget: { maxSteps: 5, maxToolCalls: 4 } }, (_request, step) => (step < 4 ? ScriptedModel.call('noop', {}) : { text: 'four' }))
    const agent = seen.host.ctx.agents.create({ model: 'm' })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    expect(seen.child).to.have.length(5)
    const notes = seen.child.map((request) => request.system!.slice(request.system!.indexOf('[Budget]')))
    // Steps (this one included) and tool calls left, as each request was made.
    notes.forEach((note, i) => {
      expect(note).to.include(`${5 - i} model step${5 - i === 1 ? '' : 's'} (this one included)`)
      expect(note).to.include(`${4 - i} tool call${4 - i === 1 ? '' : 's'}`)
      // Exactly one note in the system prompt; none in the messages (it never accumulates in the transcript).
      expect(seen!.child[i].system!.split('[Budget]')).to.have.length(2)
      expect(seen!.child[i].messages.some((message) => message.content.includes('[Budget]'))).to.equal(false)
    })
    // 20 % of 5 steps is 1 (the last step), of 4 tool calls 0.8: only the last request says to wrap up.
    expect(notes.map((note) => note.includes(WRAP_UP_HINT))).to.deep.equal([false, false, false, false, true])
    expect(seen.parent.some((request) => texts(request).includes('[Budget]'))).to.equal(false)
    await agent.dispose()
  })

  it('budgetNote: the hard limits stay exactly as strict (a child that ignores the hint stops where it would without the note)', async () => {
    const outcome = async (budgetNote: boolean) => {
      seen = await tree({ budgetNote, budget: { maxToolCalls: 2 } }, () => ScriptedModel.call('noop', {}))
      const agent = seen.host.ctx.agents.create({ model: 'm' })
      await agent.run('go')
      const toolResult = seen.parent[1].messages.find((message) => message.role === 'tool')!.content
      const childCalls = seen.child.length
      const note = seen.child.at(-1)!.system!.includes(WRAP_UP_HINT)
      await agent.dispose()
      await seen.host.stop()
      return { toolResult: toolResult.split('\n')[0], childCalls, note }
    }
    const without = await outcome(false)
    const withNote = await outcome(true)
    expect(withNote.toolResult).to.equal(without.toolResult)
    expect(withNote.toolResult).to.match(/budget/i)
    expect(withNote.childCalls).to.equal(without.childCalls)
    expect([without.note, withNote.note]).to.deep.equal([false, true])
  })

  it('tellParent: the message reaches the parent before its next step, labelled with the child\'s handle; the child goes on', async () => {
    seen = await tree({ tellParent: true }, (request, step) => {
      if (step === 0) return ScriptedModel.call('tell_parent', { message: 'found the bug in parse.ts' })
      if (step === 1) return ScriptedModel.call('noop', {})
      return { text: 'child finished after telling' }
    })
    const agent = seen.host.ctx.agents.create({ model: 'm' })
    const result = await agent.run('go')
    expect(result).to.include({ stopReason: 'completed', text: 'parent done' })
    // The child kept working: a step after the tell, then its answer, which is the tool result.
    expect(seen.child).to.have.length(3)
    expect(seen.child[1].messages.at(-1)!.content).to.match(/^Delivered to your parent \(1 of 20\)/)
    const next = seen.parent[1].messages
    expect(next.find((message) => message.role === 'tool')!.content).to.include('child finished after telling')
    expect(next.at(-1)).to.deep.equal({ role: 'user', content: '[inbox: 1 message]\n\n[from root/spawn.1]\n> found the bug in parse.ts' })
    // Only children get the tool.
    expect(seen.parent[0].tools.map((tool) => tool.name)).to.not.include('tell_parent')
    expect(seen.child[0].tools.map((tool) => tool.name)).to.include('tell_parent')
    await agent.dispose()
  })

  it('tellParent is bounded: a message past the length cap is refused, and past the count cap the child is told so and goes on', async () => {
    const tells = Array.from({ length: DEFAULT_TELLS + 1 }, (_, i) => ({ name: 'tell_parent', input: { message: `note ${i}` } }))
    seen = await tree({ tellParent: true }, (_request, step) => {
      if (step === 0) return ScriptedModel.call('tell_parent', { message: 'x'.repeat(DEFAULT_TELL_LENGTH + 1) })
      if (step === 1) return { toolCalls: tells }
      return { text: 'still here' }
    })
    const agent = seen.host.ctx.agents.create({ model: 'm' })
    const result = await agent.run('go')
    expect(result.stopReason).to.equal('completed')
    const first = seen.child[1].messages.at(-1)!
    expect(first).to.include({ role: 'tool', isError: true })
    const results = seen.child[2].messages.filter((message) => message.role === 'tool').slice(-tells.length)
    expect(results.filter((message) => message.content.startsWith('Delivered'))).to.have.length(DEFAULT_TELLS)
    expect(results.filter((message) => message.content.startsWith('TELL_LIMIT'))).to.have.length(1)
    expect(seen.parent[1].messages.find((message) => message.role === 'tool')!.content).to.include('still here')
    const inbox = seen.parent[1].messages.at(-1)!.content
    expect(inbox.startsWith(`[inbox: ${DEFAULT_TELLS} messages]`)).to.equal(true)
    expect(inbox).to.not.include('x'.repeat(100))
    await agent.dispose()
  })
})
