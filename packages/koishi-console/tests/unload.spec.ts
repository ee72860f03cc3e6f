// Unloading and reloading the page in a Koishi 4.18 App (Koishi's CommonJS build, as `koishi start` runs it) with Koishi's
// console from npm: its listeners go with the load that added them, and a newer load's stay. No port: the console runs on
// a stand-in `server` (its WebSocket layer is never opened) and a page is a socket in memory handed to the console's own
// `accept`, so each request goes through the console's dispatch as one over its WebSocket does.
import { createRequire } from 'node:module'
import { expect } from 'chai'
import type { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import * as page from '@cordis-subagents/koishi-console'
import { eventually } from '@cordis-subagents/test-support'

const require = createRequire(import.meta.url)
const EVENTS = ['subagents/transcript', 'subagents/cancel', 'subagents/answer', 'subagents/send']

interface Fork { dispose(): void; update(config: unknown): void }
type Listener = (event: { data: string }) => void
interface KoishiConsole {
  listeners: Record<string, object>
  entries: Record<string, object>
  accept(socket: object): void
}
type App = Context & {
  console: KoishiConsole
  plugin(plugin: unknown, config?: unknown): Fork
  provide(name: string, value: unknown, builtin?: boolean): void
  start(): Promise<void>
  stop(): Promise<void>
}

/** A page of the console: a socket in memory the console reads requests from and writes answers to. */
class PageSocket {
  private listener?: Listener
  private readonly waiting = new Map<string, (body: { value?: unknown; error?: unknown }) => void>()
  private sequence = 0

  addEventListener(type: string, listener: Listener): void {
    if (type === 'message') this.listener = listener
  }

  removeEventListener(): void {}

  send(text: string): void {
    const { type, body } = JSON.parse(text) as { type: string; body: { id: string; value?: unknown; error?: unknown } }
    if (type === 'response') this.waiting.get(body.id)?.({ value: body.value, error: body.error })
  }

  call(type: string, ...args: unknown[]): Promise<{ value?: unknown; error?: unknown }> {
    const id = String(++this.sequence)
    return new Promise((resolve) => {
      this.waiting.set(id, resolve)
      this.listener!({ data: JSON.stringify({ id, type, args }) })
    })
  }
}

/** The root asks its `subagent` for a deploy; the child asks its parent which region, and parks (questions: 'escalate'). */
const model = new ScriptedModel((request) => {
  const task = request.messages.find((m) => m.role === 'user')!.content
  const answered = request.messages.some((m) => m.role === 'tool')
  if (task.startsWith('Deploy ')) return answered ? { text: 'deployed' } : ScriptedModel.call('ask_parent', { question: 'Which region?' })
  return answered ? { text: 'done' } : ScriptedModel.call('subagent', { description: `deploy ${task}`, prompt: `Deploy ${task}` })
})

describe('koishi-console: unloading and reloading the page in a Koishi app', function () {
  this.timeout(20_000)
  let app: App
  let socket: PageSocket
  const roots: { dispose(): Promise<void> }[] = []

  beforeEach(async () => {
    const { App } = require('koishi') as { App: new (config: unknown) => App }
    app = new App({})
    app.provide('server', { ws: () => ({ clients: new Set(), close() {} }), get() {}, all() {} }, true)
    app.plugin((require('@koishijs/plugin-console') as { default: unknown }).default, { open: false })
    app.plugin(ToolRegistry)
    app.plugin(AgentRuntime, { model: 'scripted' })
    app.plugin({ name: 'model', inject: ['agents'], apply: (ctx: Context) => ctx.effect(() => ctx.agents.registerModel('scripted', model)) })
    app.plugin(SubagentService)
    app.plugin(spawn, { name: 'spawn', askParent: true })
    app.plugin(subagentTool, { provider: 'spawn', toolName: 'subagent', questions: 'escalate' })
    await app.start()
    socket = new PageSocket()
    app.console.accept(socket)
  })

  afterEach(async () => {
    for (const run of app.subagents.pending()) app.subagents.cancel(run.runId)
    await Promise.all(roots.splice(0).map((root) => root.dispose()))
    await app.stop()
  })

  /** A child parked on its question, started now (so only a load that was there to see it knows it). */
  const parked = async (task: string) => {
    const before = new Set(app.subagents.pending().map((run) => run.runId))
    const root = app.agents.create({ label: task })
    roots.push(root)
    expect((await root.run(task)).stopReason).to.equal('pending')
    return app.subagents.pending().find((run) => !before.has(run.runId))!.runId
  }
  const ours = () => Object.keys(app.console.listeners).filter((event) => EVENTS.includes(event))
  const entries = () => EVENTS.map((event) => app.console.listeners[event])
  const isPending = (runId: string) => app.subagents.pending().some((run) => run.runId === runId)
  /** Cancels from the page and sees the run go. */
  const cancels = async (runId: string) => {
    expect((await socket.call('subagents/cancel', runId)).value).to.deep.equal({ ok: true })
    await eventually(() => !isPending(runId), 'the cancelled run gone')
  }

  it('unloading the page takes its requests, data and entry away: a parked run can no longer be cancelled from the console', async () => {
    const pages = Object.keys(app.console.entries).length
    const fork = app.plugin(page, { flushInterval: 20 })
    await app.lifecycle.flush()
    expect(ours()).to.deep.equal(EVENTS)
    expect(Object.keys(app.console.entries)).to.have.length(pages + 1)
    const runId = await parked('alpha')
    fork.dispose()
    await app.lifecycle.flush()
    expect(Object.keys(app.console.listeners)).to.deep.equal(['ping'])
    expect(Object.keys(app.console.entries)).to.have.length(pages)
    expect(app.get('console.services.subagentNodes')).to.equal(undefined)
    expect(app.get('console.services.subagentTrees')).to.equal(undefined)
    expect(await socket.call('subagents/cancel', runId)).to.deep.include({ error: 'not implemented' })
    expect(await socket.call('subagents/transcript', runId)).to.deep.include({ error: 'not implemented' })
    expect(isPending(runId), 'the run still parked').to.equal(true)
  })

  it('a second load registered before the first unloads: the first\'s unload leaves the second\'s requests, which work', async () => {
    const first = app.plugin(page, { flushInterval: 20 })
    await app.lifecycle.flush()
    const firsts = entries()
    // Another copy of the plugin (a second module instance, as a hot reload loads one): cordis keys a runtime by `apply`.
    const second = app.plugin({ ...page, apply: (ctx: never, config: never) => page.apply(ctx, config) }, { flushInterval: 20 })
    await app.lifecycle.flush()
    const seconds = entries()
    seconds.forEach((entry, index) => expect(entry, EVENTS[index]).to.not.equal(firsts[index]))
    first.dispose()
    await app.lifecycle.flush()
    entries().forEach((entry, index) => expect(entry, EVENTS[index]).to.equal(seconds[index]))
    await cancels(await parked('beta'))
    second.dispose()
    await app.lifecycle.flush()
    expect(Object.keys(app.console.listeners)).to.deep.equal(['ping'])
  })

  it('reloaded with a new config (the old load goes first): the new load\'s requests answer; its unload takes them away', async () => {
    const fork = app.plugin(page, { flushInterval: 20 })
    await app.lifecycle.flush()
    const before = entries()
    fork.update({ flushInterval: 30 })
    await app.lifecycle.flush()
    const after = entries()
    after.forEach((entry, index) => expect(entry, EVENTS[index]).to.exist.and.not.equal(before[index]))
    const runId = await parked('gamma')
    const transcript = await socket.call('subagents/transcript', runId, 0, 5)
    expect(transcript.value, 'the new load knows the run').to.have.property('ok')
    await cancels(runId)
    fork.dispose()
    await app.lifecycle.flush()
    expect(Object.keys(app.console.listeners)).to.deep.equal(['ping'])
  })
})
