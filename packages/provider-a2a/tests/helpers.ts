import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Agent } from '@cordis-subagents/agent'
import type { ProviderStartRequest, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { type A2aProvider, createA2aProvider, type A2aProviderOptions as ProviderOptions } from '../src/index.js'

export function fakeParent(depth = 0, tools?: string[]): Agent {
  const view = tools ? { tools: { list: () => tools.map((name) => ({ name, description: '', parameters: {} })) } } : {}
  return { id: 'parent-1', depth, cwd: process.cwd(), ...view } as unknown as Agent
}

let counter = 0
export function request(overrides: Partial<ProviderStartRequest> = {}): ProviderStartRequest & { updates: SubagentUpdate[] } {
  const updates: SubagentUpdate[] = []
  return {
    prompt: 'complete',
    parent: fakeParent(),
    signal: new AbortController().signal,
    runId: `run-${++counter}`,
    depth: 1,
    maxDepthCeiling: 3,
    onUpdate: (update) => updates.push(update),
    ...overrides,
    updates,
  }
}

/** A provider for `url` with short, test-sized limits (overridable). */
export function provider(url: string, options: Partial<ProviderOptions> = {}): Promise<A2aProvider> {
  return createA2aProvider({ url, cardTimeout: 3_000, requestTimeout: 3_000, pollInterval: 50, cancelGrace: 2_000, ...options })
}

/** A provider over several endpoints (`urls`), with the same test-sized limits. */
export function pool(urls: string[], options: Partial<ProviderOptions> = {}): Promise<A2aProvider> {
  return createA2aProvider({ urls, cardTimeout: 3_000, requestTimeout: 3_000, pollInterval: 50, cancelGrace: 2_000, ...options })
}

/** A loopback URL nothing listens on (a port the system just gave out and took back). */
export async function deadUrl(): Promise<string> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return `http://127.0.0.1:${port}`
}

/** `check()` becoming true within a bound (a bounded wait, not a speed check). */
export { eventually as until } from '@cordis-subagents/test-support'
/** `promise`, or a failure if it has not settled within `ms` (it hung). */
export { within } from '@cordis-subagents/test-support'

/** Every transport mode the runs are tested in: both versions, streamed and polled; 1.0 also over HTTP+JSON. */
export const RUN_MODES = [
  { streaming: true, binding: 'JSONRPC' as const, version: '1.0' },
  { streaming: false, binding: 'JSONRPC' as const, version: '1.0' },
  { streaming: true, binding: 'HTTP+JSON' as const, version: '1.0' },
  { streaming: true, binding: 'JSONRPC' as const, version: '0.3' },
  { streaming: false, binding: 'JSONRPC' as const, version: '0.3' },
]
