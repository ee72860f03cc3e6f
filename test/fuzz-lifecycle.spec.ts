// Model-based randomized lifecycle test: random sequences of provider / tool plugin loads,
// unloads and reconfigurations, delegations, aborts, completions and app stops, run against a real
// Context with the real services (under random tree limits), checked after every step against a
// small model: no live run above any limit, spend never above a budget, every run ends. Tool loads
// run in sync or background mode; background starts, waits, cancels, aborts of the starting call
// (the parent's turn) and parent disposes are interleaved, and every background result must be
// delivered exactly once (a wait/cancel result or one inbox message) or reported lost with a reason.
//
// Replay a failure: FUZZ_SEED=<seed> FUZZ_PATH=<path> npx mocha test/fuzz-lifecycle.spec.ts
// Scale it up:      FUZZ_RUNS=500 npx mocha test/fuzz-lifecycle.spec.ts
import { expect } from 'chai'
import fc from 'fast-check'
import type { ForkScope } from 'cordis'
import type { Agent, GenerateRequest } from '@cordis-subagents/agent'
import { ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import type { ToolResult } from '@cordis-subagents/tools'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as Fork from '@cordis-subagents/provider-fork'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import {
  ProviderControl, SubagentTool, providerPlugin, setup, timerCount, type Harness,
} from '../packages/subagent-tool/tests/helpers.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 150)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
const PATH = process.env.FUZZ_PATH

const TOOL_NAMES = ['t1', 't2', 't3'] as const
/** `t9` is never registered: a model calling a tool that does not exist. */
const CALL_NAMES = [...TOOL_NAMES, 't9'] as const
/** Biased towards p1 so tools and providers meet often enough to hand runs over. */
const PROVIDER_PICKS = ['p1', 'p1', 'p2', 'p3'] as const
/** `px` is never registered: a typo'd provider name in a tool config. */
const TOOL_PROVIDER_PICKS = ['p1', 'p1', 'p2', 'p3', 'px'] as const
const PROVIDER_SLOTS = 4
const TOOL_SLOTS = 4

type Kind = 'spawn' | 'fork' | 'scripted'
/** A tool load's mode: synchronous, or background with a turn-end policy. */
type Background = 'sync' | 'wait' | 'end'
const backgroundArb = fc.constantFrom<Background>('sync', 'wait', 'end')
const VERBS = ['subagent_wait', 'subagent_cancel'] as const
type Op =
  | { t: 'loadProvider'; slot: number; kind: Kind; name: string; caps: boolean }
  | { t: 'unloadProvider'; slot: number }
  | { t: 'reconfigureProvider'; slot: number; name: string; caps: boolean }
  | { t: 'loadTool'; slot: number; toolName: string; provider: string; persona: boolean; background: Background }
  | { t: 'unloadTool'; slot: number }
  | { t: 'reconfigureTool'; slot: number; toolName: string; provider: string; persona: boolean; background: Background }
  | { t: 'wait'; parent: number; mode: 'any' | 'all'; one: boolean; index: number }
  | { t: 'bgCancel'; parent: number; index: number }
  | { t: 'disposeParent'; parent: number }
  | { t: 'call'; pick: number; known: boolean; valid: boolean }
  | { t: 'abort'; index: number }
  | { t: 'finish'; index: number; ok: boolean }
  | { t: 'stop' }

/** The service's tree limits for one sequence: small enough that starts are refused and queued. */
interface Limits { maxChildren: number; maxConcurrent: number; maxConcurrentPerParent: number }
const limitsArb: fc.Arbitrary<Limits> = fc.record({
  maxChildren: fc.constantFrom(1, 2, 64),
  maxConcurrent: fc.constantFrom(1, 2, 16),
  maxConcurrentPerParent: fc.constantFrom(1, 8),
})

/** Every sequence starts with one provider and a tool bound to it, so delegations happen early. */
const prefixArb: fc.Arbitrary<Op[]> = fc.record({ kind: fc.constantFrom<Kind>('spawn', 'fork', 'scripted'), caps: fc.boolean(), background: backgroundArb })
  .map(({ kind, caps, background }) => [
    { t: 'loadProvider', slot: 0, kind, name: 'p1', caps },
    { t: 'loadTool', slot: 0, toolName: 't1', provider: 'p1', persona: false, background },
  ])

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('loadProvider' as const), slot: fc.nat(PROVIDER_SLOTS - 1), kind: fc.constantFrom<Kind>('spawn', 'fork', 'scripted'), name: fc.constantFrom(...PROVIDER_PICKS), caps: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('unloadProvider' as const), slot: fc.nat(PROVIDER_SLOTS - 1) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('reconfigureProvider' as const), slot: fc.nat(PROVIDER_SLOTS - 1), name: fc.constantFrom(...PROVIDER_PICKS), caps: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('loadTool' as const), slot: fc.nat(TOOL_SLOTS - 1), toolName: fc.constantFrom(...TOOL_NAMES), provider: fc.constantFrom(...TOOL_PROVIDER_PICKS), persona: fc.boolean(), background: backgroundArb }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('unloadTool' as const), slot: fc.nat(TOOL_SLOTS - 1) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('reconfigureTool' as const), slot: fc.nat(TOOL_SLOTS - 1), toolName: fc.constantFrom(...TOOL_NAMES), provider: fc.constantFrom(...TOOL_PROVIDER_PICKS), persona: fc.boolean(), background: backgroundArb }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('wait' as const), parent: fc.nat(2), mode: fc.constantFrom<'any' | 'all'>('any', 'all'), one: fc.boolean(), index: fc.nat(20) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('bgCancel' as const), parent: fc.nat(2), index: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('disposeParent' as const), parent: fc.nat(2) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('call' as const), pick: fc.nat(11), known: fc.oneof({ arbitrary: fc.constant(true), weight: 4 }, { arbitrary: fc.constant(false), weight: 1 }), valid: fc.oneof({ arbitrary: fc.constant(true), weight: 4 }, { arbitrary: fc.constant(false), weight: 1 }) }), weight: 6 },
  { arbitrary: fc.record({ t: fc.constant('abort' as const), index: fc.nat(40) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('finish' as const), index: fc.nat(40), ok: fc.boolean() }), weight: 5 },
  { arbitrary: fc.constant({ t: 'stop' as const }), weight: 1 },
)

// ---------------------------------------------------------------------------------------------
// The model

interface ProviderSlot { kind: Kind; name: string; caps: boolean; active: boolean; rev: number }
interface ToolSlot { toolName: string; provider: string; persona: boolean; background: Background; active: boolean; rev: number }

class Model {
  providers: (ProviderSlot | undefined)[] = Array(PROVIDER_SLOTS).fill(undefined)
  tools: (ToolSlot | undefined)[] = Array(TOOL_SLOTS).fill(undefined)
  stopped = false

  /** Whether a provider slot's apply succeeds now: its name is not held by another active slot. */
  providerWins(slot: number, name: string): boolean {
    return !this.providers.some((other, i) => i !== slot && other?.active && other.name === name)
  }

  toolWins(slot: number, name: string): boolean {
    return !this.tools.some((other, i) => i !== slot && other?.active && other.toolName === name)
  }

  provider(name: string): ProviderSlot | undefined {
    return this.providers.find((slot) => slot?.active && slot.name === name)
  }

  /** A tool is registered iff its plugin is loaded, won its reservation, and its provider is present and accepts its config. */
  expectedTools(): Set<string> {
    const names = new Set<string>()
    if (this.stopped) return names
    for (const slot of this.tools) {
      if (!slot?.active) continue
      const provider = this.provider(slot.provider)
      if (!provider) continue
      const personaOk = !slot.persona || provider.kind !== 'scripted' || provider.caps
      if (personaOk) names.add(slot.toolName)
    }
    return names
  }

  expectedProviders(): string[] {
    if (this.stopped) return []
    return this.providers.filter((slot) => slot?.active).map((slot) => slot!.name).sort()
  }
}

// ---------------------------------------------------------------------------------------------
// The real world

interface Call {
  tool: string
  parent: Agent
  controller: AbortController
  promise: Promise<ToolResult>
  deliveries: number
  result?: ToolResult
  /** Whether the model expected the tool to exist when it was called. */
  registered: boolean
  valid: boolean
}

interface PendingReply {
  request: GenerateRequest
  resolve(response: ScriptedResponse): void
}

const EXPECTED_ERRORS = new Set(['DUPLICATE_PROVIDER', 'DUPLICATE_TOOL'])

class World {
  readonly model = new Model()
  limits!: Limits
  /** Handed-over runs per parent id (each parent is the root of its own tree here). */
  readonly startedBy = new Map<string, number>()
  readonly control = new ProviderControl()
  readonly providerForks: (ForkScope | undefined)[] = Array(PROVIDER_SLOTS).fill(undefined)
  readonly toolForks: (ForkScope | undefined)[] = Array(TOOL_SLOTS).fill(undefined)
  readonly calls: Call[] = []
  readonly replies: PendingReply[] = []
  readonly started = new Set<string>()
  readonly ended = new Set<string>()
  readonly problems: string[] = []
  /** Three parents, so the per-parent gate (8) does not queue most calls. */
  parents: Agent[] = []
  /** Messages each parent's inbox took (the background results delivered as messages). */
  readonly posts = new Map<Agent, string[]>()
  h!: Harness
  /** Kept: `ctx.subagents` is gone once the app stopped. */
  subagents!: Harness['ctx']['subagents']
  rev = 0

  static async create(limits: Limits): Promise<World> {
    const world = new World()
    world.limits = limits
    world.h = await setup({ subagents: limits })
    const { ctx } = world.h
    world.subagents = ctx.subagents
    ctx.agents.registerModel('m', new ScriptedModel((request) => new Promise<ScriptedResponse>((resolve) => {
      world.replies.push({ request, resolve })
    })))
    world.parents = [0, 1, 2].map((i) => ctx.agents.create({ model: 'm', label: `parent${i}` }))
    for (const parent of world.parents) {
      const posted: string[] = []
      world.posts.set(parent, posted)
      const post = parent.inbox.post.bind(parent.inbox)
      parent.inbox.post = (content, delegation) => {
        const entry = post(content, delegation)
        posted.push(content)
        return entry
      }
    }
    ctx.plugin(SubagentControl as any, {})
    // Observers outside every scope (pushed straight onto the hook list): ctx.stop() removes the
    // root's own listeners first, and runs cancelled by the stop end after that.
    const hooks = ctx.lifecycle._hooks as Record<string, { ctx: unknown; callback: (...args: any[]) => void }[]>
    const observe = (name: string, callback: (...args: any[]) => void) => (hooks[name] ||= []).push({ ctx, callback })
    observe('subagent/start', (info: { runId: string; parentId: string }) => {
      if (world.started.has(info.runId)) world.problems.push(`subagent/start twice for ${info.runId}`)
      world.started.add(info.runId)
      world.startedBy.set(info.parentId, (world.startedBy.get(info.parentId) ?? 0) + 1)
    })
    observe('subagent/end', (info: { runId: string }) => {
      if (!world.started.has(info.runId)) world.problems.push(`subagent/end without start for ${info.runId}`)
      if (world.ended.has(info.runId)) world.problems.push(`subagent/end twice for ${info.runId}`)
      world.ended.add(info.runId)
    })
    return world
  }

  providerConfig(kind: Kind, name: string, caps: boolean) {
    const description = `rev ${++this.rev}`
    if (kind !== 'scripted') return { name, description }
    return { name, description, capabilities: { persona: caps, toolFilter: caps, depthLimit: caps } }
  }

  providerPlugin(kind: Kind): any {
    return kind === 'spawn' ? Spawn : kind === 'fork' ? Fork : providerPlugin(this.control)
  }

  toolConfig(slot: ToolSlot) {
    // `timeout` differs on every load so a reconfigure always restarts the plugin.
    return {
      provider: slot.provider, toolName: slot.toolName, timeout: 600_000 + slot.rev,
      ...slot.persona ? { persona: 'You are terse.' } : {},
      ...slot.background === 'sync' ? {} : { mode: 'background', onTurnEnd: slot.background },
    }
  }

  async apply(op: Op) {
    const { ctx } = this.h
    const { model } = this
    switch (op.t) {
      case 'loadProvider': {
        if (this.providerForks[op.slot]) await this.apply({ t: 'unloadProvider', slot: op.slot })
        const active = model.providerWins(op.slot, op.name)
        model.providers[op.slot] = { kind: op.kind, name: op.name, caps: op.caps, active, rev: 0 }
        this.providerForks[op.slot] = ctx.plugin(this.providerPlugin(op.kind), this.providerConfig(op.kind, op.name, op.caps))
        break
      }
      case 'unloadProvider': {
        this.providerForks[op.slot]?.dispose()
        this.providerForks[op.slot] = undefined
        model.providers[op.slot] = undefined
        break
      }
      case 'reconfigureProvider': {
        const slot = model.providers[op.slot]
        const fork = this.providerForks[op.slot]
        if (!slot || !fork) return
        slot.active = false
        const active = model.providerWins(op.slot, op.name)
        model.providers[op.slot] = { ...slot, name: op.name, caps: op.caps, active }
        fork.update(this.providerConfig(slot.kind, op.name, op.caps))
        break
      }
      case 'loadTool': {
        if (this.toolForks[op.slot]) await this.apply({ t: 'unloadTool', slot: op.slot })
        const active = model.toolWins(op.slot, op.toolName)
        const slot: ToolSlot = {
          toolName: op.toolName, provider: op.provider, persona: op.persona, background: op.background, active, rev: ++this.rev,
        }
        model.tools[op.slot] = slot
        this.toolForks[op.slot] = ctx.plugin(SubagentTool as any, this.toolConfig(slot))
        break
      }
      case 'unloadTool': {
        this.toolForks[op.slot]?.dispose()
        this.toolForks[op.slot] = undefined
        model.tools[op.slot] = undefined
        break
      }
      case 'reconfigureTool': {
        const old = model.tools[op.slot]
        const fork = this.toolForks[op.slot]
        if (!old || !fork) return
        old.active = false
        const active = model.toolWins(op.slot, op.toolName)
        const slot: ToolSlot = {
          toolName: op.toolName, provider: op.provider, persona: op.persona, background: op.background, active, rev: ++this.rev,
        }
        model.tools[op.slot] = slot
        fork.update(this.toolConfig(slot))
        break
      }
      case 'call': {
        // Mostly call a tool that exists now (else a random name, maybe one never registered).
        const present = [...model.expectedTools()].sort()
        const tool = op.known && present.length ? present[op.pick % present.length] : CALL_NAMES[op.pick % CALL_NAMES.length]
        const input = op.valid ? { description: `task ${this.calls.length}`, prompt: 'Do the thing.' } : { description: 'x', prompt: '   ' }
        const live = this.parents.filter((parent) => !parent.disposed)
        if (!live.length) return
        this.callTool(tool, input, live[this.calls.length % live.length], model.expectedTools().has(tool), op.valid)
        break
      }
      case 'wait':
      case 'bgCancel': {
        // A verb call of one parent, for one of its handles (or, for wait, all of them).
        const parent = this.parents[op.parent]
        if (parent.disposed) return
        const tasks = this.subagents.background.peek(parent)?.list() ?? []
        const handle = tasks.length ? tasks[op.index % tasks.length].handle : 'bg-1'
        const input = op.t === 'bgCancel' ? { handle }
          : { ...op.one ? { handles: [handle] } : {}, mode: op.mode, timeoutSeconds: 1 }
        this.callTool(op.t === 'wait' ? VERBS[0] : VERBS[1], input, parent, true, true)
        break
      }
      case 'disposeParent': {
        await this.parents[op.parent].dispose()
        break
      }
      case 'abort': {
        if (!this.calls.length) return
        this.calls[op.index % this.calls.length].controller.abort()
        break
      }
      case 'finish': {
        // Settle one pending child: a scripted provider run or a spawn/fork child's model reply.
        const runs = this.control.runs.filter((run) => !run.outcome.settled)
        const replies = this.replies.filter((reply) => !reply.request.signal.aborted)
        const total = runs.length + replies.length
        if (!total) return
        const pick = op.index % total
        if (pick < runs.length) {
          const run = runs[pick]
          if (op.ok) run.complete('scripted answer')
          else run.finish({ stopReason: 'error', output: 'half', diagnostic: 'it broke' })
        } else {
          const reply = replies[pick - runs.length]
          this.replies.splice(this.replies.indexOf(reply), 1)
          reply.resolve(op.ok ? { text: 'child answer' } : { text: 'cut', finishReason: 'length' })
        }
        break
      }
      case 'stop': {
        model.stopped = true
        await ctx.stop()
        break
      }
    }
    await ctx.lifecycle.flush()
    await hops(3)
  }

  callTool(tool: string, input: unknown, parent: Agent, registered: boolean, valid: boolean) {
    const controller = new AbortController()
    const call: Call = { tool, parent, controller, deliveries: 0, valid, registered, promise: undefined as never }
    call.promise = this.h.ctx.tools.view().execute({ name: tool, input }, {
      signal: controller.signal, agent: parent, toolCallId: `call-${this.calls.length}`,
    })
    call.promise.then((result) => {
      call.deliveries++
      call.result = result
    }, (error) => {
      this.problems.push(`tool call ${tool} rejected: ${error}`)
    })
    this.calls.push(call)
  }

  /**
   * Every background result was delivered exactly once — in one wait/cancel result of its own
   * parent or in one message to that parent's inbox, never both — or reported lost with a reason.
   */
  checkBackground(at: string, final: boolean) {
    for (const parent of this.parents) {
      const book = this.subagents.background.peek(parent)
      if (!book) continue
      expect(book.liveCount, `live background children of ${parent.id} ${at}`).to.be.at.most(this.subagents.background.limits.maxLive)
      const texts = [
        ...this.posts.get(parent)!,
        ...this.calls
          .filter((call) => call.parent === parent && call.result && (VERBS as readonly string[]).includes(call.tool))
          .map((call) => call.result!.content),
      ]
      for (const task of book.list()) {
        if (final) expect(task.delivery, `background ${parent.id}/${task.handle} never delivered nor lost ${at}`).to.not.equal(undefined)
        if (!task.delivery) continue
        const header = `[Background subagent ${task.handle} ${JSON.stringify(task.label)}`
        const seen = texts.reduce((sum, text) => sum + text.split(header).length - 1, 0)
        if (task.delivery.via === 'lost') {
          expect(task.delivery.reason, `lost without a reason ${at}`).to.match(/\S/)
          // A message posted but never read (its parent was disposed first) was posted once, never read.
          expect(seen, `lost result ${parent.id}/${task.handle} was shown ${at}`).to.equal(task.delivery.unread ? 1 : 0)
          if (final) stats.lost++
        } else if (task.delivery.via === 'message' || final) {
          // A wait's result is counted once its call returned (at the end every call has).
          expect(seen, `result of ${parent.id}/${task.handle} (${task.delivery.via}) shown ${seen} times ${at}`).to.equal(1)
        }
      }
    }
  }

  check(step: string) {
    const { ctx } = this.h
    const at = `after ${step}`
    expect(this.problems, at).to.deep.equal([])
    const unexpected = this.h.errors.filter((error) => !EXPECTED_ERRORS.has((error as { code?: string })?.code ?? ''))
    expect(unexpected.map(String), `unexpected internal errors ${at}`).to.deep.equal([])
    if (this.model.stopped) return
    const listed = ctx.tools.view().list().map((tool) => tool.name)
    expect(new Set(listed).size, `a tool name is registered twice ${at}`).to.equal(listed.length)
    const subagentTools = listed.filter((name) => (TOOL_NAMES as readonly string[]).includes(name)).sort()
    expect(subagentTools, `registered tools ${at}`).to.deep.equal([...this.model.expectedTools()].sort())
    expect(ctx.subagents.list().map((p) => p.name).sort(), `registered providers ${at}`).to.deep.equal(this.model.expectedProviders())
    for (const call of this.calls) {
      expect(call.deliveries, `a call delivered more than one result ${at}`).to.be.at.most(1)
      if (call.result && (!call.registered || !call.valid)) {
        // Unknown tool or invalid input: an error result, nothing started.
        expect(call.result.isError, `result of ${call.tool} ${at}: ${call.result.content}`).to.equal(true)
      }
    }
    for (const run of this.control.runs) expect(run.disposeCalls, `a scripted run disposed twice ${at}`).to.be.at.most(1)
    this.checkLimits(at)
    this.checkBackground(at, false)
  }

  /** No live run above any limit; a tree's delegations never above maxChildren (children here do not delegate). */
  checkLimits(at: string) {
    const { limits } = this
    const live = new Map<string, number>()
    for (const info of this.subagents.runs()) live.set(info.parentId, (live.get(info.parentId) ?? 0) + 1)
    for (const parent of this.parents) {
      const working = live.get(parent.id) ?? 0
      expect(working, `live runs of ${parent.id} ${at}`).to.be.at.most(Math.min(limits.maxConcurrent, limits.maxConcurrentPerParent))
      expect(this.startedBy.get(parent.id) ?? 0, `delegations started by ${parent.id} ${at}`).to.be.at.most(limits.maxChildren)
      expect(parent.budget.spent.children, `delegations charged to ${parent.id} ${at}`).to.be.at.most(limits.maxChildren)
    }
    for (const call of this.calls) {
      if (!call.result?.isError || !call.result.content.includes('BUDGET_EXCEEDED')) continue
      // A refusal for the children budget names the limit and what to do.
      expect(call.result.content, `a budget refusal ${at}`).to.include(`children budget (${limits.maxChildren} delegations`)
    }
  }

  /** Stops the app, lets every call settle and checks the end-of-sequence invariants. */
  async finish(baselineTimers: number) {
    const { ctx } = this.h
    if (!this.model.stopped) {
      this.model.stopped = true
      await ctx.stop()
    }
    // Every call must settle by itself once the app stopped (no abort from us).
    await settleAll(this.calls.map((call) => call.promise), 5000)
    await hops(5)
    expect(this.problems).to.deep.equal([])
    for (const [i, call] of this.calls.entries()) {
      expect(call.deliveries, `call ${i} (${call.tool}) delivered ${call.deliveries} results`).to.equal(1)
      expect(call.result!.content, `call ${i} result content`).to.be.a('string')
    }
    for (const [i, run] of this.control.runs.entries()) {
      expect(run.disposeCalls, `scripted run ${i} disposed ${run.disposeCalls} times`).to.equal(1)
    }
    expect(this.subagents.runs(), 'live runs after stop').to.deep.equal([])
    expect(this.subagents.background.live.size, 'live background delegations after stop').to.equal(0)
    this.checkBackground('at the end', true)
    for (const parent of this.parents) stats.background += this.subagents.background.peek(parent)?.list().length ?? 0
    expect([...this.started].filter((id) => !this.ended.has(id)), 'subagent/start without subagent/end').to.deep.equal([])
    // Nothing of our plugins still listens on the app.
    const hooks = ctx.lifecycle._hooks as Record<string, unknown[]>
    for (const name of ['subagent/provider-added', 'subagent/provider-removed', 'subagent/update', 'tools/changed']) {
      expect(hooks[name]?.length ?? 0, `listeners left on ${name}`).to.equal(0)
    }
    expect(timerCount(), 'timers left beyond the baseline').to.be.at.most(baselineTimers)
  }
}

function hops(n: number): Promise<void> {
  let p = Promise.resolve()
  for (let i = 0; i < n; i++) p = p.then(() => new Promise<void>((resolve) => setImmediate(resolve)))
  return p
}

async function settleAll(promises: Promise<unknown>[], ms: number) {
  let pending = promises.length
  for (const promise of promises) promise.then(() => pending--, () => pending--)
  const deadline = Date.now() + ms
  while (pending > 0 && Date.now() < deadline) await hops(1)
  if (pending > 0) throw new Error(`${pending} tool call(s) never returned after the app stopped (hang)`)
}

const stats = { sequences: 0, steps: 0, calls: 0, runs: 0, refused: 0, background: 0, lost: 0 }

describe('fuzz: plugin lifecycle against a model', function () {
  // FUZZ_RUNS scales the budget too (about 30-60 ms per sequence here; generous for slow machines).
  this.timeout(Math.max(120_000, RUNS * 300))

  let unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => { unhandled.push(reason) }
  before(() => process.on('unhandledRejection', onUnhandled))
  after(() => process.off('unhandledRejection', onUnhandled))

  it(`keeps every invariant over ${RUNS} random sequences`, async () => {
    const sequenceArb = fc.tuple(prefixArb, fc.array(opArb, { minLength: 15, maxLength: 60, size: 'medium' })).map(([prefix, rest]) => [...prefix, ...rest])
    const property = fc.asyncProperty(limitsArb, sequenceArb, async (limits, ops) => {
      unhandled = []
      const baselineTimers = timerCount()
      const world = await World.create(limits)
      try {
        for (const [i, op] of ops.entries()) {
          if (world.model.stopped) break
          await world.apply(op)
          world.check(`step ${i} ${JSON.stringify(op)}`)
          stats.steps++
        }
        await world.finish(baselineTimers)
        await hops(2)
        expect(unhandled.map(String), 'unhandled rejections').to.deep.equal([])
        stats.sequences++
        stats.calls += world.calls.length
        stats.runs += world.started.size
        stats.refused += world.calls.filter((call) => call.result?.content.includes('BUDGET_EXCEEDED')).length
      } finally {
        await world.h.stop()
      }
    })
    await fc.assert(property, {
      numRuns: RUNS,
      ...SEED === undefined ? {} : { seed: SEED },
      ...PATH === undefined ? {} : { path: PATH },
      // The seed and path are in the failure message; print them for replay as well.
      reporter: (details) => {
        if (details.failed) {
          console.error(`fuzz failure: replay with FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath}`)
          throw new Error(`${fc.defaultReportMessage(details) ?? 'fuzz failure'}\nCause: ${(details.errorInstance as Error)?.stack ?? String(details.errorInstance)}`)
        }
      },
    })
    console.log(`      fuzz: ${stats.sequences} sequences, ${stats.steps} steps, ${stats.calls} tool calls, ${stats.runs} runs handed over, ${stats.refused} refused by a tree budget, ${stats.background} background delegations (${stats.lost} lost to a parent's dispose)`)
  })
})
