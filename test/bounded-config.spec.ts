// One validator for every duration and count (@cordis-subagents/shared): a timer Node cannot honour
// (> 2^31-1 ms fires after 1 ms) or a count that is not a safe integer fails the one plugin at
// load, loudly, and the rest of the app keeps running. Programmatic factories check the same.
import { readdirSync, readFileSync } from 'node:fs'
import { expect } from 'chai'
import { MAX_TIMER_MS } from '@cordis-subagents/shared'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as Acp from '@cordis-subagents/provider-acp'
import * as OpenAI from '@cordis-subagents/model-openai'
import { createAcpProvider } from '@cordis-subagents/provider-acp'
import { captureLogs } from './support/logs.js'

/** cordis `ScopeStatus.FAILED`. */
const FAILED = 3
const TOO_LONG = 2 ** 31
const HUGE = 1e300

describe('bounded durations and counts in every config', () => {
  let ctx: Context
  let restore: () => void

  beforeEach(async () => {
    restore = captureLogs().restore
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime)
    ctx.plugin(SubagentService)
    await ctx.start()
    await ctx.lifecycle.flush()
  })

  afterEach(async () => {
    await ctx.stop()
    restore()
  })

  const cases: Array<[string, unknown, Record<string, unknown>]> = [
    ['subagent-tool timeout', SubagentTool, { provider: 'spawn', toolName: 't1', timeout: TOO_LONG }],
    ['subagent-tool budget.maxSteps', SubagentTool, { provider: 'spawn', toolName: 't2', budget: { maxSteps: HUGE } }],
    ['subagent-tool maxDepth', SubagentTool, { provider: 'spawn', toolName: 't3', maxDepth: HUGE }],
    ['provider-acp startupTimeout', Acp, { name: 'a1', command: 'node', startupTimeout: TOO_LONG }],
    ['provider-acp cancelGrace', Acp, { name: 'a2', command: 'node', cancelGrace: 1e12 }],
    ['provider-acp killGrace', Acp, { name: 'a3', command: 'node', killGrace: TOO_LONG }],
    ['provider-acp maxStreamBytes', Acp, { name: 'a4', command: 'node', maxStreamBytes: HUGE }],
    ['provider-spawn maxSteps', Spawn, { name: 's1', maxSteps: HUGE }],
    ['model-openai timeout', OpenAI, { name: 'o1', apiKey: '', timeout: TOO_LONG }],
    ['model-openai maxRetries', OpenAI, { name: 'o2', apiKey: '', maxRetries: HUGE }],
  ]
  for (const [what, plugin, config] of cases) {
    it(`${what} out of range fails that plugin at load; the app runs on`, async () => {
      const fork = ctx.plugin(plugin as never, config)
      const good = ctx.plugin(Spawn, { name: `ok-${what.replace(/[^a-z]/gi, '')}` })
      await ctx.lifecycle.flush()
      expect(fork.status).to.equal(FAILED)
      expect(good.status).to.not.equal(FAILED)
      expect(ctx.subagents.get(`ok-${what.replace(/[^a-z]/gi, '')}`)).to.not.equal(undefined)
    })
  }

  it('ctx.agents: a root depth of 1e300 or a budget limit past the safe integers fails the runtime at load', async () => {
    for (const config of [{ depth: HUGE }, { budget: { maxTokens: HUGE } }, { maxToolCallsPerStep: HUGE }]) {
      const app = new Context()
      app.plugin(ToolRegistry)
      const fork = app.plugin(AgentRuntime, config as never)
      await app.start()
      await app.lifecycle.flush()
      expect(fork.status, JSON.stringify(config)).to.equal(FAILED)
      await app.stop()
    }
  })

  it('programmatic APIs check the same: createAcpProvider, ctx.agents.create', () => {
    const logger = ctx.logger('test')
    expect(() => createAcpProvider({ command: 'node', cancelGrace: 1e12, logger }))
      .to.throw(/cancelGrace must be an integer from 0 to 2147483647 ms, got 1000000000000/)
    expect(() => createAcpProvider({ command: 'node', startupTimeout: 0, logger })).to.throw(/startupTimeout/)
    expect(() => ctx.agents.create({ maxSteps: HUGE })).to.throw(/options\.maxSteps must be an integer from 1 to 9007199254740991/)
    expect(() => ctx.agents.create({ maxTokens: 2.5 })).to.throw(/options\.maxTokens/)
  })

  it('every option in ms of every published entry\'s Config refuses more than MAX_TIMER_MS (a budget\'s maxWallMs aside)', async () => {
    // A time option is named so: ends in Ms, Timeout, Wait, Interval, Delay, Grace, Ttl, or is a debounce or a timeout.
    const timed = /(ms|timeout|wait|interval|delay|grace|ttl|debounce)$/i
    const found: string[] = []
    const unbounded: string[] = []
    const visited = new Set<SchemaNode>()
    const walk = (schema: SchemaNode | undefined, path: string) => {
      if (!schema || visited.has(schema)) return
      visited.add(schema)
      for (const [key, inner] of Object.entries(schema.dict ?? {})) {
        const at = `${path}.${key}`
        // maxWallMs is a budget limit (a count), clamped to MAX_TIMER_MS where its timer is armed (packages/agent/src/budget.ts).
        if (timed.test(key) && key !== 'maxWallMs' && inner.type === 'number') {
          found.push(at)
          if (!(Number(inner.meta?.max) <= MAX_TIMER_MS)) unbounded.push(`${at} (max ${inner.meta?.max})`)
        }
        walk(inner, at)
      }
      for (const inner of schema.list ?? []) walk(inner, path)
      walk(schema.inner, `${path}[]`)
    }
    const root = new URL('../packages/', import.meta.url)
    for (const dir of readdirSync(root)) {
      const manifest = JSON.parse(readFileSync(new URL(`${dir}/package.json`, root), 'utf8')) as { name: string; private?: boolean; exports?: object }
      if (manifest.private) continue
      // The bins start a process when imported; testing entries hold no plugin.
      for (const entry of Object.keys(manifest.exports ?? {}).filter((key) => !/package\.json|bin|testing/.test(key))) {
        const mod = await import(entry === '.' ? manifest.name : `${manifest.name}/${entry.slice(2)}`) as { Config?: SchemaNode; default?: { Config?: SchemaNode } }
        for (const config of new Set([mod.Config, mod.default?.Config])) if (config) walk(config, `${manifest.name}${entry.slice(1)}`)
      }
    }
    expect(found.length, 'time options found (the sweep reaches them)').to.be.greaterThan(60)
    expect(unbounded).to.deep.equal([])
  })
})

/** What the sweep reads of a schemastery schema: an object's keys, a union's or intersection's members, a list's item. */
interface SchemaNode { type?: string; dict?: Record<string, SchemaNode>; list?: SchemaNode[]; inner?: SchemaNode; meta?: { max?: number } }
