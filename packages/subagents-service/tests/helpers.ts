import type { Context } from 'cordis'
import type AgentRuntime from '@cordis-subagents/agent'
import type { Agent } from '@cordis-subagents/agent'
import type { Config, SubagentProvider, SubagentRequest } from '@cordis-subagents/subagents-service'
import { deferred, tick, isSettled } from '../../../test/support/async.js'
import { startHost } from '../../../test/support/host.js'

export { deferred, tick, isSettled }

export const FAILED = 3


export interface Harness {
  ctx: Context
  /** Every `internal/error` cordis reported. */
  errors: unknown[]
  /** Every warning the `subagents` logger wrote. */
  warnings: string[]
  /** A root agent (depth from the runtime config, default 0). */
  root: Agent
  stop(): Promise<void>
}

/**
 * A started root context with the real `ctx.tools`, `ctx.agents` and `ctx.subagents`. The logger
 * output is captured (not printed) until `stop()`.
 */
export async function setup(config: Partial<Config> = {}, agents: AgentRuntime.Config = {}): Promise<Harness> {
  const host = await startHost({ subagents: config, agents, captureLogs: true })
  return {
    ctx: host.ctx,
    errors: host.errors,
    get warnings() {
      return host.logs.filter((r) => r.name === 'subagents' && r.type === 'warn').map((r) => r.content)
    },
    root: host.ctx.agents.create({ label: 'root' }),
    stop: host.stop,
  }
}

// The fake provider is the kit's (one fake for every package's tests and for provider authors).
export { ALL_CAPABILITIES as ALL, FakeProvider, NO_CAPABILITIES as NONE } from '@cordis-subagents/subagents-service/testing'

/** A fresh plugin (never de-duplicated by cordis) that registers `provider` in its own scope. */
export function providerPlugin(provider: SubagentProvider) {
  return {
    name: `provider-${provider.name}`,
    inject: ['subagents'],
    apply(ctx: Context) {
      ctx.subagents.register(provider)
    },
  }
}

export function request(parent: Agent, overrides: Partial<SubagentRequest> = {}): SubagentRequest {
  return {
    prompt: 'Summarise the file.',
    parent,
    signal: new AbortController().signal,
    ...overrides,
  }
}

/** Records the service's events in order, as compact strings plus their arguments. */
export function recordEvents(ctx: Context) {
  const log: string[] = []
  const args: unknown[][] = []
  ctx.on('subagent/provider-added', (provider) => { log.push(`added:${provider.name}`); args.push([provider]) })
  ctx.on('subagent/provider-removed', (name) => { log.push(`removed:${name}`); args.push([name]) })
  ctx.on('subagent/start', (info) => { log.push(`start:${info.runId}`); args.push([info]) })
  ctx.on('subagent/update', (info, update) => { log.push(`update:${info.runId}:${update.text ?? update.kind}`); args.push([info, update]) })
  ctx.on('subagent/end', (info, result) => { log.push(`end:${info.runId}:${result.stopReason}`); args.push([info, result]) })
  return { log, args }
}

export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the promise to reject, but it fulfilled')
}
