import type { ListTasksRequest, Task } from '@a2a-js/sdk'
import { encodedBytes } from './task-codec.js'

/** Largest ListTasks page (the tasks' stored JSON); a page holds fewer tasks than asked when they do not fit. */
export const MAX_LIST_BYTES = 1024 * 1024

/**
 * What ListTasks returns of a task: its ids, status and metadata; its latest `historyLength`
 * messages only when asked (none by default: the spec leaves the default to the server), its
 * artifacts only with `includeArtifacts`. A copy of those parts, never of the whole task.
 */
export function summaryOf(task: Task, params: Pick<ListTasksRequest, 'historyLength' | 'includeArtifacts'>): Task {
  const length = params.historyLength ?? 0
  return structuredClone({
    id: task.id, contextId: task.contextId, status: task.status, metadata: task.metadata,
    history: length > 0 ? (task.history ?? []).slice(-length) : [],
    artifacts: params.includeArtifacts ? task.artifacts ?? [] : [],
  })
}

/**
 * The first summaries that fit in `maxBytes` together, in order; the first one always (so paging
 * goes on). `summarize` is called only for the tasks looked at.
 */
export function fitPage<T>(tasks: Iterable<T>, summarize: (task: T) => Task, maxBytes = MAX_LIST_BYTES): Task[] {
  const page: Task[] = []
  let bytes = 0
  for (const task of tasks) {
    const summary = summarize(task)
    bytes += encodedBytes(summary)
    if (page.length && bytes > maxBytes) break
    page.push(summary)
  }
  return page
}
