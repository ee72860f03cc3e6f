// A durable host for the exactly-once specs: the real services, minato with a real SQLite file or
// a real PostgreSQL server, and a fixture provider at the far edge that counts every child turn it
// runs (a start, a restore, an answer), so a test can tell a settled run never ran again.
import { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentProvider, SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import type { RunRecord } from '../../packages/subagents-service/src/types.js'
import { type Backend, PG_URL, serviceOf } from '../../packages/checkpoints/tests/support.js'
import { tick } from './async.js'
import { stopApp } from './stop-app.js'

/** Child turns the fixture ran, across host starts in this process (a turn of a settled run would be one too many). */
export const turns = { start: 0, restore: 0, answer: 0 }

/** Prompt "done": completes at once; "ask": parks on one question, completes with the answer. */
export function onceProvider(): SubagentProvider {
  const run = (id: string, first: Promise<SubagentResult>): SubagentRun => ({
    id,
    childId: `child-of-${id}`,
    result: first,
    cancel: () => {},
    dispose: async () => {},
    resume: async (answer) => {
      turns.answer++
      return { stopReason: 'completed', output: `got ${answer}` }
    },
    checkpoint: () => ({ v: 1 }),
  })
  const question = (runId: string): PendingQuestion => ({ id: `q-${runId}`, kind: 'ask', text: 'Which colour?', path: [] })
  return {
    name: 'once',
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    async start(request) {
      turns.start++
      return run(request.runId, Promise.resolve<SubagentResult>(request.prompt === 'done'
        ? { stopReason: 'completed', output: `done ${request.label ?? ''}`.trim() }
        : { stopReason: 'pending', output: '', question: question(request.runId) }))
    },
    async restore(record: RunRecord, request) {
      turns.restore++
      return run(request.runId, Promise.resolve<SubagentResult>(record.state === 'parked'
        ? { stopReason: 'pending', output: '', question: record.question! }
        : { stopReason: 'interrupted', output: '' }))
    },
  }
}

export interface OnceHost {
  ctx: Context
  stop(): Promise<void>
}

/**
 * Starts a host on `backend`: the database plugins after the services (`order: 'service-first'`)
 * or before them; resolves once `ctx.checkpoints` is ready. `host` names it in the store.
 */
export async function startOnceHost(backend: Backend, order: 'service-first' | 'database-first', host = 'once-host'): Promise<OnceHost> {
  const ctx = new Context()
  const services = () => {
    ctx.plugin(ToolRegistry, {})
    ctx.plugin(AgentRuntime, {})
    ctx.plugin(SubagentService, {})
  }
  const database = () => {
    ctx.plugin(Database as never)
    if (backend.kind === 'sqlite') ctx.plugin(SQLiteDriver, { path: backend.path })
    else ctx.plugin(PostgresDriver as never, { url: PG_URL })
    ctx.plugin(Checkpoints, { host })
  }
  if (order === 'service-first') {
    services()
    database()
  } else {
    database()
    services()
  }
  ctx.plugin({ name: 'once', apply: (inner: Context) => { inner.subagents.register(onceProvider()) } })
  await ctx.start()
  await serviceOf(ctx, 'checkpoints')
  let stopped = false
  return {
    ctx,
    async stop() {
      if (stopped) return
      stopped = true
      await stopApp(ctx)
      await tick()
    },
  }
}
