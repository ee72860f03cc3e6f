import type { Context } from 'cordis'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/subagents-service'
import { ConsoleError } from './errors.js'
import type { ViewHost } from './node-view.js'
import { agentTranscriptPage, type TranscriptPage } from './transcript.js'
import type { TreeStore } from './tree-store.js'

/**
 * Feeds `store` from the runtime's observer (root runs, in-process agents) and the service's
 * `subagent/*` events: what the standalone page shows, for another host of the view (a page of
 * Koishi's console, `@cordis-subagents/koishi-console`). The observers end with `ctx`.
 */
export function observeDelegations(ctx: Context, store: TreeStore): void {
  // Direct listeners, not `ctx.on`: a cordis listener pays cordis' caller tracing on every call.
  ctx.subagents.observe({
    'subagent/start': (info) => store.start(info),
    'subagent/update': (info, update) => store.update(info, update),
    'subagent/end': (info, outcome) => store.end(info, outcome),
    'subagent/pending': (info, question) => store.parked(info, question),
    'subagent/resume': (info) => store.resumed(info.runId),
  })
  ctx.agents.observe({
    runStart: (agent, prompt, resumed) => store.runStart(agent, prompt, resumed),
    runEnd: (agent, result) => store.runEnd(agent, result),
    modelCallEnd: (agent, step) => { if (!agent.parent) store.rootStep(agent, step) },
    toolCallStart: (agent, step, call) => { if (!agent.parent) store.rootStep(agent, step, `calls ${call.name}`) },
  })
}

/**
 * A page of one run's transcript: an in-process child's own messages, else the progress the store
 * kept (a ring). Unknown run: `NOT_FOUND`. `limit` is the caller's to bound (the page asks at most `MAX_PAGE`).
 */
export function transcriptOf(host: ViewHost & { maxEntryChars: number }, runId: string, offset: number, limit: number): TranscriptPage {
  const node = host.store.nodes.get(runId)
  if (!node) throw new ConsoleError('NOT_FOUND', `No run ${runId} in the console (it never started, or its tree was dropped: maxTrees).`)
  if (node.agent && !node.root) return agentTranscriptPage(node.agent.transcript.messages, offset, limit, host.maxEntryChars)
  return node.ring.page(offset, limit)
}
