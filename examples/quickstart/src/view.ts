import type { Context } from 'cordis'
import SubagentConsole from '@cordis-subagents/console'

/** How long `--view` waits for the console to listen before it gives up. */
const LISTEN_TIMEOUT_MS = 10_000

/** `--view`: loads the live delegation view (packages/console) and returns its URL (token included). */
export async function openView(ctx: Context): Promise<string> {
  ctx.plugin(SubagentConsole)
  for (let waited = 0; waited < LISTEN_TIMEOUT_MS; waited += 10) {
    const url = ctx.get('subagentConsole')?.url
    if (url) return url
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('the delegation view (packages/console) did not start listening within 10 s; run with --verbose to see why')
}

/** What `--view` prints once the task ended: the page stays up. */
export const VIEW_STAYS = 'view: the page stays up with the tree; Ctrl-C to quit.'
