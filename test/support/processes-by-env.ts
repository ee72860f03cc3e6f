// Finds processes by a variable in their environment (Linux /proc). A real adapter starts helpers
// of its own (Codex's native binary, Claude Code's CLI, the MCP servers it launches), and each
// inherits the environment, so a unique value there finds the whole family wherever it moved.
import { readdirSync, readFileSync } from 'node:fs'

/** Pids of live processes whose environment holds `name=value` exactly. */
export function processesWithEnv(name: string, value: string): number[] {
  const needle = `${name}=${value}`
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(needle)) found.push(Number(entry))
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found
}

/** Polls (bounded, 50 ms apart) until no process holds `name=value`; returns those left. */
export async function reaped(name: string, value: string, timeout = 20_000): Promise<number[]> {
  const deadline = Date.now() + timeout
  for (;;) {
    const left = processesWithEnv(name, value)
    if (!left.length || Date.now() > deadline) return left
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
