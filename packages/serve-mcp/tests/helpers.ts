import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { eventually as poll } from '@cordis-subagents/test-support'

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

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export { processAlive as alive } from '@cordis-subagents/test-support'

/** Polls `check` every 20 ms until it holds or `timeout` ms passed (then throws with `what`). */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeout = 10_000): Promise<void> {
  await poll(check, what, { timeout, every: 20 })
}

/** Reads a spec's log file (empty if not written yet). */
export function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}
