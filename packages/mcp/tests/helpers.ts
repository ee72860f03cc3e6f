import { mkdtempSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import ToolRegistry, { type ToolExecContext } from '@cordis-subagents/tools'
import * as client from '@cordis-subagents/mcp'
import { eventually as poll } from '@cordis-subagents/test-support'

const require = createRequire(import.meta.url)

/** The entries every loader spec here starts with: tools, agents (model `test`), the fixture model plugin, the service. */
export const CORE_ENTRIES = `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: test
- id: model
  name: ${JSON.stringify(fileURLToPath(new URL('./fixtures/model-plugin.ts', import.meta.url)))}
- id: subagents
  name: '@cordis-subagents/subagents-service'`

export const FIXTURE_SERVER = fileURLToPath(new URL('./fixtures/server.mjs', import.meta.url))

/** The bin file of an npm MCP server package (run with node: offline, no npx). */
export function serverBin(pkg: '@modelcontextprotocol/server-everything' | '@modelcontextprotocol/server-filesystem'): string {
  const root = dirname(require.resolve(`${pkg}/package.json`))
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }
  return join(root, Object.values(manifest.bin)[0])
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export async function setup(): Promise<{ ctx: Context; errors: unknown[] }> {
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.plugin(ToolRegistry)
  await ctx.start()
  return { ctx, errors }
}

export { client }

export function makeExec(overrides: Partial<ToolExecContext> = {}): ToolExecContext {
  return { signal: new AbortController().signal, agent: { id: 'agent-1', depth: 0 }, toolCallId: 'call-1', ...overrides }
}

export { processAlive as alive } from '@cordis-subagents/test-support'

/** Polls `check` every 20 ms until it holds or `timeout` ms passed (then throws with `what`). */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeout = 10_000): Promise<void> {
  await poll(check, what, { timeout, every: 20 })
}

/** Reads the fixture server's log file (empty if not written yet). */
export function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

export function fixturePid(file: string): number {
  const match = /pid (\d+)/.exec(readLog(file))
  if (!match) throw new Error('the fixture server has not logged its pid')
  return Number(match[1])
}
