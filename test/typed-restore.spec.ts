// Issue 44 leftover: a typed child (an `output` schema) restored from its checkpoint after a restart,
// or continued after it finished, keeps its schema: it is offered the final-answer tool again and
// its answer is checked. The schema is stored with the run (in the child's checkpoint); one that no
// longer passes the checks fails the restore (INVALID_OUTPUT_SCHEMA, as the cause of the start failure). Real SQLite store, real
// spawn provider, real service and tool; only the models are scripted.
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ForkScope } from 'cordis'
import { FINAL_ANSWER_TOOL, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { loadTool } from './support/background.js'
import { type Host, startHost } from './support/host.js'
import { durableSpawnHost, lastUser } from './support/durable-spawn-host.js'
import { waitFor } from './support/host-process-wait.js'

const SCHEMA = {
  type: 'object',
  properties: { colour: { type: 'string' } },
  required: ['colour'],
  additionalProperties: false,
}
const finalTool = (request: GenerateRequest) => request.tools.find((tool) => tool.name === FINAL_ANSWER_TOOL)

describe('typed results: a restored or continued child keeps its output schema', function () {
  this.timeout(30_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'typed-restore-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** Blocks (a tool that waits for its abort) until told to go on; then answers through the final-answer tool when it is offered. */
  const childModel = () => new ScriptedModel((request) => {
    if (lastUser(request) !== 'go on') return { toolCalls: [{ name: 'block', input: {} }] }
    return finalTool(request) ? { toolCalls: [{ name: FINAL_ANSWER_TOOL, input: { colour: 'blue' } }] } : { text: 'blue, untyped' }
  })

  const durableHost = (file: string, model: ScriptedModel, stores: ForkScope[] = []) =>
    durableSpawnHost({ file, hostName: 'typed-restore', model, hosts, stores })

  /** A typed child left `running` in the store by a host that went away (its store first, as a killed host's). */
  async function interruptedTypedRun(file: string): Promise<{ runId: string; model: ScriptedModel }> {
    const model = childModel()
    const stores: ForkScope[] = []
    const first = await durableHost(file, model, stores)
    const parent = first.ctx.agents.create({ label: 'lead' })
    const handle = await first.ctx.subagents.delegate('spawn', {
      prompt: 'Pick a colour.', parent, signal: new AbortController().signal, agentOptions: { model: 'child' }, output: { schema: SCHEMA, maxCorrections: 3 },
    })
    await waitFor(async () => (await first.ctx.checkpoints.load(handle.id))?.state === 'running', 'the run recorded running')
    // The schema is stored with the run: in its checkpoint, as given (and bounded as any output schema).
    const stored = await first.ctx.checkpoints.load(handle.id)
    expect((stored!.transcript as { output?: unknown }).output).to.deep.equal({ schema: SCHEMA, maxCorrections: 3 })
    stores[0].dispose()
    await first.stop()
    return { runId: handle.id, model }
  }

  it('restored after a restart: the new turn is offered the final-answer tool with the schema and its answer is the value', async () => {
    const file = join(dir, 'restore.db')
    const { runId } = await interruptedTypedRun(file)
    const model = childModel()
    const second = await durableHost(file, model)
    expect(second.ctx.checkpoints.interruptedAtStart).to.equal(1)
    const outcome = await second.ctx.subagents.resume(runId, 'go on')
    expect(outcome.stopReason, outcome.diagnostic).to.equal('completed')
    expect(outcome.value).to.deep.equal({ colour: 'blue' })
    expect(JSON.parse(outcome.output)).to.deep.equal({ colour: 'blue' })
    const asked = model.requests.at(-1)!
    expect(lastUser(asked)).to.equal('go on')
    expect(finalTool(asked)?.parameters).to.deep.equal(SCHEMA)
  })

  it('a stored schema that no longer passes the checks fails the restore (PROVIDER_START_FAILED caused by INVALID_OUTPUT_SCHEMA); nothing runs', async () => {
    const file = join(dir, 'bad-schema.db')
    const { runId } = await interruptedTypedRun(file)
    const model = childModel()
    const second = await durableHost(file, model)
    const stored = (await second.ctx.checkpoints.load(runId))!
    // A schema the checks refuse (a backtracking `pattern`), as an older version or a hand edit could leave.
    const bad = { schema: { type: 'object', properties: { colour: { type: 'string', pattern: '^(a+)+$' } } } }
    await second.ctx.checkpoints.save({ id: runId, transcript: { ...stored.transcript as object, output: bad } })
    let failure: unknown
    await second.ctx.subagents.resume(runId, 'go on').catch((error: unknown) => { failure = error })
    expect(failure, 'the resume rejects').to.not.equal(undefined)
    // As any start whose provider's create() refuses: the service's code, the agent's coded error as its cause.
    expect((failure as { code?: string }).code, String(failure)).to.equal('PROVIDER_START_FAILED')
    expect((failure as { cause?: { code?: string } }).cause?.code).to.equal('INVALID_OUTPUT_SCHEMA')
    expect(String((failure as Error).message)).to.include('options.restore.output').and.include('pattern')
    expect(model.callCount).to.equal(0)
  })

  it('continued with subagent_continue: the finished typed child answers its new turn through the schema; the verb carries the value', async () => {
    const host = await startHost()
    hosts.push(host)
    const { ctx } = host
    let turn = 0
    const child = new ScriptedModel((request) => {
      if (!finalTool(request)) return { text: 'no schema offered' }
      turn += request.messages.at(-1)!.role === 'user' ? 1 : 0
      return { toolCalls: [{ name: FINAL_ANSWER_TOOL, input: { colour: turn === 1 ? 'red' : 'green' } }] }
    })
    ctx.agents.registerModel('child', child)
    ctx.plugin(Spawn as never, { name: 'spawn' })
    await loadTool(ctx, { provider: 'spawn', agentOptions: { model: 'child' }, output: { schema: SCHEMA } })
    ctx.plugin(SubagentControl as never, {})
    await ctx.lifecycle.flush()
    const parent = ctx.agents.create()
    const first = await parent.tools.execute({ name: 'subagent', input: { description: 'colour', prompt: 'Pick a colour.' } }, { signal: new AbortController().signal, agent: parent, toolCallId: 'c1' })
    expect(first.structured).to.deep.equal({ colour: 'red' })
    const next = await parent.tools.execute(
      { name: 'subagent_continue', input: { subagent: 'colour', message: 'Another one.' } }, { signal: new AbortController().signal, agent: parent, toolCallId: 'c2' },
    )
    expect(next.isError, next.content).to.equal(undefined)
    expect(next.structured).to.deep.equal({ colour: 'green' })
    expect(next.metadata).to.deep.include({ stopReason: 'completed' })
    expect(finalTool(child.requests.at(-1)!)?.parameters).to.deep.equal(SCHEMA)
    expect(child.callCount).to.equal(2)
  })
})
