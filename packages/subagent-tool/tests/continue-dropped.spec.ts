/// <reference types="mocha" />
// subagent_continue of a run the service's continuable book dropped to bound memory (past its 256 runs or its 64 MiB): the
// model is told the service's own reason (dropped, delegate a new task) whether it names the run by id or by the description
// it gave it. A dropped run another parent delegated stays unknown to this model: it gets the same text as a run id that
// never existed. Children are real agents of ctx.agents with a scripted model, run by an in-process provider that can
// continue them (as spawn's: the child rebuilt from its checkpoint).
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type Agent, type AgentCheckpoint, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import {
  MAX_CONTINUABLE_RUNS, type ProviderStartRequest, type SubagentProvider, type SubagentRun,
} from '@cordis-subagents/subagents-service'
import { NO_CAPABILITIES } from '@cordis-subagents/subagents-service/testing'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { type Harness, setup } from './helpers.js'

/** Runs whose children can be continued (`inproc`), or not (`oneshot`): each a child agent of ctx.agents on model `child`. */
function inProcess(agents: Context['agents'], name = 'inproc'): SubagentProvider {
  const start = (request: ProviderStartRequest, restore?: AgentCheckpoint): Promise<SubagentRun> => {
    const { parent, budget } = request
    const child: Agent = agents.create(restore ? { parent, budget, restore } : { parent, budget, model: 'child' })
    const run: SubagentRun = {
      id: request.runId,
      childId: child.id,
      result: child.run(request.prompt).then((ended) => ({ stopReason: ended.stopReason, output: ended.text })),
      cancel: () => child.abort(),
      dispose: () => child.dispose(),
    }
    if (name === 'inproc') run.continueWith = (message, next) => start({ ...next, prompt: message }, child.checkpoint())
    return Promise.resolve(run)
  }
  return { name, capabilities: NO_CAPABILITIES, inheritsParentContext: false, start }
}

/** The tool results the model read, in the order it called the tools. */
const toolResults = (request: GenerateRequest) => request.messages.flatMap((message) => message.role === 'tool' ? [message.content] : [])

describe('subagent_continue of a run dropped to bound memory', () => {
  let h: Harness
  let child: ScriptedModel
  /** What the parents' model calls `subagent_continue` with in its next turn (one call each), before it answers. */
  let names: string[] = []
  let parentModel: ScriptedModel

  beforeEach(async () => {
    h = await setup()
    child = new ScriptedModel(() => ({ text: 'child answer' }))
    h.ctx.agents.registerModel('child', child)
    parentModel = new ScriptedModel((request) => request.messages.some((message) => message.role === 'tool') ? { text: 'done' }
      : { toolCalls: names.map((subagent, i) => ({ id: `c${i}`, name: 'subagent_continue', input: { subagent, message: 'Go on.' } })) })
    h.ctx.agents.registerModel('parent', parentModel)
    h.ctx.subagents.register(inProcess(h.ctx.agents))
    h.ctx.subagents.register(inProcess(h.ctx.agents, 'oneshot'))
    h.ctx.plugin(SubagentControl as any, {})
    await h.ctx.lifecycle.flush()
  })
  afterEach(async () => { await h.stop() })

  /** One finished delegation of `parent` (disposed, as the subagent tool disposes a run it returned): its run id. */
  async function delegated(parent: Agent, label?: string, provider = 'inproc'): Promise<string> {
    const signal = new AbortController().signal
    const run = await h.ctx.subagents.delegate(provider, { prompt: 'Do it.', parent, signal, ...label ? { label } : {} })
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
    return run.id
  }

  /** `parent`'s model calls subagent_continue on each of `subagents` in one turn: the results it read. */
  async function continues(parent: Agent, subagents: string[]): Promise<string[]> {
    names = subagents
    const before = parentModel.requests.length
    expect((await parent.run('Go on with them.')).stopReason).to.equal('completed')
    return toolResults(parentModel.requests[before + 1])
  }

  it('the model is told it was dropped and to delegate a new task; another parent\'s dropped run gets the generic text', async function () {
    this.timeout(60_000)
    const parent = h.ctx.agents.create({ model: 'parent', label: 'parent' })
    const other = h.ctx.agents.create({ model: 'parent', label: 'other' })
    const first = await delegated(parent, 'release notes')
    const theirs = await delegated(other, 'release notes')
    // Past the book's count bound: every later run from a root of its own (a tree takes 16 delegations by default).
    for (let i = 0; i < MAX_CONTINUABLE_RUNS; i++) {
      const root = h.ctx.agents.create({})
      await delegated(root)
      await root.dispose()
    }
    const second = await delegated(parent, 'changelog')
    const kept = h.ctx.subagents.continuable.list().map((info) => info.runId)
    expect(kept).to.have.length(MAX_CONTINUABLE_RUNS)
    expect(kept).to.include(second).and.not.include(first).and.not.include(theirs)
    // The other parent's run was dropped too: its own parent is told so.
    const error = await h.ctx.subagents.continue(theirs, 'x', { parent: other })
      .then(() => undefined, (failure: unknown) => failure as Error)
    expect(error?.message).to.match(/dropped to bound memory/)

    const turns = child.callCount
    const madeUp = `${first}0`
    const [byId, byLabel, foreign, unknown] = await continues(parent, [first, 'release notes', theirs, madeUp])
    const dropped = `NOT_FOUND: Run ${JSON.stringify(first)} can no longer be continued: it was dropped to bound memory (this host keeps `
      + `the ${MAX_CONTINUABLE_RUNS} continuable runs that ended last, at most 64 MiB of their transcripts). Delegate a new task instead.`
    expect(byId, 'named by its run id').to.equal(dropped)
    expect(byLabel, 'named by the description it was given').to.equal(dropped)

    // Another parent's dropped run: the verb's own text, the same as for a run id that never existed (nothing confirmed).
    const generic = (name: string) => `You have no finished subagent ${JSON.stringify(name)} that can be continued. `
      + `Yours, most recent first: "changelog" (${second}).`
    expect(foreign).to.equal(generic(theirs))
    expect(unknown).to.equal(generic(madeUp))
    expect(child.callCount, 'no child ran a new turn').to.equal(turns)

    await parent.dispose()
    await other.dispose()
  })

  it('its own run whose provider cannot continue runs: the service\'s reason; a run it did not delegate: the generic text', async () => {
    const parent = h.ctx.agents.create({ model: 'parent', label: 'parent' })
    const once = await delegated(parent, 'summary', 'oneshot')
    // A run its own child delegated (a grandchild) is not its own either.
    const grandchild = await delegated(h.ctx.agents.create({ parent, model: 'child' }), 'summary', 'inproc')
    const [byId, byLabel, deeper] = await continues(parent, [once, 'summary', grandchild])
    const reason = `NOT_FOUND: No run ${JSON.stringify(once)} can be continued by you: `
    expect(byId).to.satisfy((text: string) => text.startsWith(reason)).and.match(/its provider cannot continue runs/)
    expect(byLabel).to.equal(byId)
    expect(deeper).to.equal(`You have no finished subagent ${JSON.stringify(grandchild)} that can be continued. `
      + 'None of yours can be continued now (a subagent stays continuable for a while after it finished).')
    await parent.dispose()
  })
})
