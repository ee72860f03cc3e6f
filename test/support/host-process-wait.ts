// Waiting on state a host writes in the background (a database, another process), bounded.

import { eventually } from '@cordis-subagents/test-support'

/** Polls `check` every 20 ms until it holds; throws after `timeoutMs` (default 15 s) naming `what`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  await eventually(check, what, { timeout: timeoutMs, every: 20 })
}
