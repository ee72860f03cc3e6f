// Waiting on state a host writes in the background (a database, another process), bounded.

/** Polls `check` every 20 ms until it holds; throws after `timeoutMs` (default 15 s) naming `what`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
