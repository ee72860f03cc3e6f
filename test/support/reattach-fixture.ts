// The far edge of the reattach specs (test/durable-reattach-*.spec.ts): a provider that counts, per task (its prompt),
// its starts, restores, answers and how many of its children were live at once; and a host on a SQLite file with it.
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import type { Agent } from '@cordis-subagents/agent'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentProvider, SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import { serviceOf } from '../../packages/checkpoints/tests/support.js'
import { type Host, type HostOptions, startHost } from './host.js'

/** What the fixture did for one task (its prompt). */
export type Task = { starts: number; restores: number; answers: string[]; live: Set<string>; most: number }

const question: PendingQuestion = { id: 'colour', kind: 'ask', text: 'Which colour?', path: [] }

/** How a call that must fail failed (undefined: it did not). */
export const failure = (call: Promise<unknown>) => call.then(() => undefined, (error: { code?: string; message: string }) => error)

/** A reattaching delegation of task `prompt`. */
export const reattachRequest = (prompt: string, parent: Agent, signal = new AbortController().signal) =>
  ({ prompt, reattach: true, parent, signal })

/** One spec file's fixture: its tasks, its hooks (awaited as a restore, a rejection failing it, or an answer, begins), its provider. */
export function reattachFixture() {
  const tasks = new Map<string, Task>()
  const hooks: { restore?: () => Promise<void>; answer?: () => Promise<void> } = {}
  const taskOf = (prompt: string): Task => {
    if (!tasks.has(prompt)) tasks.set(prompt, { starts: 0, restores: 0, answers: [], live: new Set(), most: 0 })
    return tasks.get(prompt)!
  }
  const child = (prompt: string, id: string, first: SubagentResult): SubagentRun => {
    const task = taskOf(prompt)
    task.live.add(id)
    task.most = Math.max(task.most, task.live.size)
    const end = () => { task.live.delete(id) }
    return {
      id, childId: `child-of-${id}`, result: Promise.resolve(first), cancel: end, dispose: async () => end(),
      resume: async (answer) => {
        task.answers.push(answer)
        await hooks.answer?.()
        end()
        return { stopReason: 'completed', output: `got ${answer}` }
      },
      checkpoint: () => ({ prompt }),
    }
  }
  const provider = (): SubagentProvider => ({
    name: 'fx',
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    async start(request) {
      taskOf(request.prompt).starts++
      return child(request.prompt, request.runId, { stopReason: 'pending', output: '', question })
    },
    async restore(record, request) {
      const { prompt } = record.checkpoint as { prompt: string }
      await hooks.restore?.()
      taskOf(prompt).restores++
      return child(prompt, request.runId, { stopReason: 'pending', output: '', question: record.question! })
    },
  })
  return { tasks, hooks, taskOf, provider }
}

/** A host on SQLite `file` with checkpoints (host name `name`) and `fixture`'s provider, pushed to `hosts` to be stopped. */
export async function reattachHost(
  file: string, name: string, fixture: () => SubagentProvider, hosts: Host[], subagents?: HostOptions['subagents'],
): Promise<Host> {
  const started = await startHost({
    ...subagents ? { subagents } : {},
    before(ctx: Context) {
      ctx.plugin(Database as never)
      ctx.plugin(SQLiteDriver, { path: file })
      ctx.plugin(Checkpoints, { host: name })
      ctx.plugin({ name: 'fx', apply: (inner: Context) => { inner.subagents.register(fixture()) } })
    },
  })
  hosts.push(started)
  await serviceOf(started.ctx, 'checkpoints')
  return started
}
