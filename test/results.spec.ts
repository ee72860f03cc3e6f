// Results are re-readable (issue 38, item 11): every final outcome is kept by run id. The host reads
// it with ctx.subagents.result(runId); the parent's model reads a cut output in pages with
// subagent_result, from the offset the cut result names. Nothing is re-run. Real Context, services,
// spawn provider, subagent-tool, subagent-control and tool registry; ScriptedModel at the edge.
import { expect } from 'chai'
import { z } from 'zod'
import type { Context } from 'cordis'
import { type GenerateRequest, type Message, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import type { ToolView } from '@cordis-subagents/tools'
import { startHost, type Host } from './support/host.js'
import { until } from './support/async.js'

/** 6,000 characters, 12,000 UTF-8 bytes or so: ASCII, two-byte and four-byte characters mixed, every line numbered. */
const LONG = Array.from({ length: 200 }, (_, i) => `line ${String(i).padStart(3, '0')}: é ü 😀 the child's findings, in full\n`).join('')

async function rejection(promise: Promise<unknown>): Promise<any> {
  return promise.then(() => { throw new Error('expected a rejection') }, (error) => error)
}

const lastTool = (request: GenerateRequest): string | undefined => {
  const last = request.messages.at(-1) as Message & { content: unknown }
  return last?.role === 'tool' ? String(last.content) : undefined
}

/** The `{ … }` input of the read-on call a result names, e.g. `subagent_result { "handle": "run-…", "offset": 512 }`. */
function readOnCall(text: string): { handle: string; offset: number } | undefined {
  const match = /(?:read the rest|read on) with subagent_result (\{[^}]*\})/.exec(text)
  return match ? JSON.parse(match[1]) : undefined
}

/** The output a page shows: the text between its header (and blank line) and its closing note. */
function pageText(content: string): string {
  const body = content.slice(content.indexOf('\n\n') + 2)
  return body.slice(0, body.lastIndexOf('\n\n['))
}

/**
 * A parent that delegates once, then follows every read-on note with `subagent_result` until the
 * output ends, and answers 'done'. Returns the first tool result and every page it read.
 */
function readingParent(ctx: Context, tools?: ToolView) {
  const seen: string[] = []
  const model = new ScriptedModel((request) => {
    const tool = lastTool(request)
    if (tool === undefined) return { toolCalls: [{ name: 'subagent', input: { description: 'Survey', prompt: 'Report everything.' } }] }
    seen.push(tool)
    const next = readOnCall(tool)
    return next ? { toolCalls: [{ name: 'subagent_result', input: next }] } : { text: 'done' }
  })
  ctx.agents.registerModel('parent', model)
  return { agent: ctx.agents.create({ model: 'parent', label: 'root', ...tools ? { tools } : {} }), model, seen }
}

describe('results are re-readable: ctx.subagents.result(runId) and subagent_result', () => {
  let host: Host
  let child: ScriptedModel

  async function load(tool: Record<string, unknown> = {}, spawn: Record<string, unknown> = {}, text = LONG) {
    host = await startHost()
    child = new ScriptedModel(() => ({ text }))
    host.ctx.agents.registerModel('child', child)
    host.ctx.plugin(Spawn as never, { name: 'spawn', ...spawn })
    host.ctx.plugin(SubagentTool as never, { provider: 'spawn', agentOptions: { model: 'child' }, ...tool })
    host.ctx.plugin(SubagentControl as never, {})
    await host.ctx.lifecycle.flush()
  }

  afterEach(async () => { await host?.stop() })

  it('a cut result names the run id and the verb; the parent reads the rest in pages and gets the whole output, the child runs once', async () => {
    await load({ maxOutputBytes: 4000 })
    const { agent, seen } = readingParent(host.ctx)
    const result = await agent.run('Survey the project.')
    expect(result).to.include({ stopReason: 'completed', text: 'done' })
    expect(child.callCount, 'the child ran once: reading never re-runs it').to.equal(1)
    const [first, ...pages] = seen
    const runId = /"handle": "(run-[^"]+)"/.exec(first)![1]
    expect(first).to.match(new RegExp(`\\[Output truncated: the subagent returned ${Buffer.byteLength(LONG)} bytes; the first (\\d+) are shown\\. `
      + `The whole output is kept: read the rest with subagent_result \\{ "handle": "${runId}", "offset": \\1 \\}\\.\\]$`))
    expect(pages.length).to.be.at.least(1)
    expect(pages.at(-1)).to.match(/\[End of the output\.\]$/)
    const head = first.slice(0, first.indexOf('\n\n[Output truncated'))
    expect(head + pages.map(pageText).join('')).to.equal(LONG)

    const kept = await host.ctx.subagents.result(runId)
    expect(kept).to.include({ runId, provider: 'spawn', parentId: agent.id, stopReason: 'completed', output: LONG, source: 'memory', truncated: false })
    expect(child.callCount).to.equal(1)
  })

  it('under a caller\'s lower tool result cap the cut is ours, within the cap, and names the offset to read on from', async () => {
    await load()
    // The registry caps at 100 KiB; this parent's own view at 2 KiB, far below the tool's maxOutputBytes (64 KiB).
    const { agent, seen } = readingParent(host.ctx, host.ctx.tools.view(undefined, { maxResultBytes: 2048 }))
    const result = await agent.run('Survey the project.')
    expect(result).to.include({ stopReason: 'completed', text: 'done' })
    expect(child.callCount).to.equal(1)
    const [first, ...pages] = seen
    expect(Buffer.byteLength(first)).to.be.at.most(2048)
    expect(first).to.not.contain('the tool result cap is')
    expect(first).to.match(/read the rest with subagent_result \{ "handle": "run-[^"]+", "offset": \d+ \}\.\]$/)
    for (const page of pages) expect(Buffer.byteLength(page)).to.be.at.most(2048)
    const head = first.slice(0, first.indexOf('\n\n[Output truncated'))
    expect(head + pages.map(pageText).join('')).to.equal(LONG)
  })

  it('an output that fits the caller\'s lower cap whole is not cut', async () => {
    const fits = 'x'.repeat(2000)
    await load({}, {}, fits)
    const { agent, seen } = readingParent(host.ctx, host.ctx.tools.view(undefined, { maxResultBytes: 2048 }))
    await agent.run('Survey the project.')
    expect(seen).to.deep.equal([fits])
  })

  it('a background child\'s result reads again by its handle, as often as asked', async () => {
    await load({ mode: 'background', toolName: 'subagent_bg' })
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'subagent_bg', input: { description: 'Survey', prompt: 'Report everything.' } }] },
      { toolCalls: [{ name: 'subagent_wait', input: {} }] },
      { toolCalls: [{ name: 'subagent_result', input: { handle: 'bg-1', offset: 0, length: 300 } }] },
      { toolCalls: [{ name: 'subagent_result', input: { handle: 'bg-1', offset: 0, length: 300 } }] },
      // Offset 10 is the 2-byte 'é': a 1-byte page shows it whole, and reads on after it.
      { toolCalls: [{ name: 'subagent_result', input: { handle: 'bg-1', offset: 11, length: 1 } }] },
      { toolCalls: [{ name: 'subagent_result', input: { handle: 'bg-1', offset: 10, length: 1 } }] },
      { text: 'done' },
    ])
    host.ctx.agents.registerModel('parent', model)
    const agent = host.ctx.agents.create({ model: 'parent', label: 'root' })
    await agent.run('Survey in the background.')
    const [once, twice] = [model.requests[3], model.requests[4]].map((request) => lastTool(request)!)
    expect(once).to.equal(twice)
    const [, total, end] = /^Subagent run-\S+ \("Survey"\) ended completed\. Its output is (\d+) bytes; this is bytes 0 to (\d+)\./.exec(once)!
    expect(Number(total)).to.equal(Buffer.byteLength(LONG))
    expect(Number(end)).to.be.within(297, 300)
    expect(Buffer.byteLength(pageText(once))).to.equal(Number(end))
    expect(pageText(once)).to.equal(LONG.slice(0, pageText(once).length))
    expect(once).to.match(/\[\d+ more bytes: read on with subagent_result \{ "handle": "bg-1", "offset": \d+ \}\.\]$/)
    const [inside, tiny] = [model.requests[5], model.requests[6]].map((request) => lastTool(request)!)
    expect(inside).to.match(/this is bytes 12 to 13\./)
    expect(pageText(inside)).to.equal(' ')
    expect(tiny).to.match(/this is bytes 10 to 12\./)
    expect(pageText(tiny)).to.equal('é')
    expect(tiny).to.match(/read on with subagent_result \{ "handle": "bg-1", "offset": 12 \}/)
    expect(child.callCount).to.equal(1)
  })

  it('result(runId) of a running, parked or unknown run rejects with a stable code and re-runs nothing; another agent cannot read it', async () => {
    await load({}, { askParent: true })
    const { ctx } = host
    let waiting = 0
    ctx.tools.register({
      name: 'watch', description: 'waits until stopped', input: z.strictObject({}),
      execute: (_input, exec) => new Promise((resolve) => {
        waiting++
        exec.signal.addEventListener('abort', () => resolve({ content: 'stopped' }), { once: true })
      }),
    })
    const said = (request: GenerateRequest, text: string) => request.messages.some((m: Message) => m.role === 'user' && String(m.content).includes(text))
    const worker = new ScriptedModel((request) => said(request, 'Watch')
      ? { toolCalls: [{ name: 'watch', input: {} }] }
      : request.messages.some((m: Message) => m.role === 'tool') ? { text: 'blue it is' } : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] })
    ctx.agents.registerModel('worker', worker)
    const parent = ctx.agents.create({ label: 'host' })
    const delegate = (prompt: string) => ctx.subagents.delegate('spawn', { prompt, parent, signal: new AbortController().signal, agentOptions: { model: 'worker' } })

    const running = await delegate('Watch the logs.')
    await until(() => waiting === 1, 'the child waits in its tool')
    const calls = worker.callCount
    const busy = await rejection(ctx.subagents.result(running.id))
    expect(busy).to.include({ code: 'NOT_ENDED' })
    expect(busy.message).to.match(/is running/)

    const asking = await delegate('Pick a colour.')
    expect((await asking.result).stopReason).to.equal('pending')
    const parked = await rejection(ctx.subagents.result(asking.id))
    expect(parked).to.include({ code: 'NOT_ENDED' })
    expect(parked.message).to.match(/is parked.*resume/)
    expect(worker.callCount, 'reading started no model call').to.equal(calls + 1)

    expect(await rejection(ctx.subagents.result('run-nobody'))).to.include({ code: 'NOT_FOUND' })
    expect(await rejection(ctx.subagents.result(''))).to.include({ code: 'INVALID_REQUEST' })

    const answered = await asking.resume('blue')
    expect(answered.output).to.equal('blue it is')
    expect(await ctx.subagents.result(asking.id)).to.include({ stopReason: 'completed', output: 'blue it is', parentId: parent.id })
    running.cancel('enough')
    await running.result
    expect((await ctx.subagents.result(running.id)).stopReason).to.equal('aborted')

    // The model-facing verb reads only runs its own agent started.
    const exec = (agent: { id: string }) => ({ signal: new AbortController().signal, agent: agent as never, toolCallId: 'c' })
    const own = await parent.tools.execute({ name: 'subagent_result', input: { handle: asking.id } }, exec(parent))
    expect(own.content).to.match(/ended completed[\s\S]*blue it is[\s\S]*\[End of the output\.\]$/)
    const stranger = ctx.agents.create({ label: 'stranger' })
    const other = await stranger.tools.execute({ name: 'subagent_result', input: { handle: asking.id } }, exec(stranger))
    expect(other).to.include({ isError: true })
    expect(other.content).to.match(/^You have no ended subagent/)
    await Promise.all([running.dispose(), asking.dispose()])
  })
})
