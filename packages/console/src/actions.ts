import { describeError } from '@cordis-subagents/shared'
import { ConsoleError } from './errors.js'
import { backgroundTaskOf, CANCEL_REASON, type ViewHost } from './node-view.js'

/**
 * Cancels one running child, through the public handles the host has: a background task (any
 * provider) is cancelled in its parent's book; an in-process child (spawn, fork) has its turn
 * aborted. A synchronous ACP / A2A delegation's handle is held by the tool call that started it,
 * which the service does not expose: `NOT_CANCELLABLE` says so.
 */
export function cancelRun(host: ViewHost, runId: string): void {
  const node = running(host, runId)
  const task = backgroundTaskOf(host, node)
  if (task?.live || node.agent) {
    node.cancelledHere = true
    return task?.live ? task.cancel(CANCEL_REASON) : node.agent!.abort(CANCEL_REASON)
  }
  throw new ConsoleError('NOT_CANCELLABLE', `Run ${runId} (${node.provider}) was started synchronously by its parent's tool call, which holds its only handle; cancel the parent's turn, or start such children with a background tool load (mode: background) to cancel them here.`)
}

/**
 * Sends a message to one running child: a background task's run through the service's `send`
 * (steering, any provider that supports it); an in-process child through its inbox (read before
 * its next model call; a turn that would end with it unread takes one more step).
 */
export function sendToRun(host: ViewHost, runId: string, message: unknown): void {
  if (typeof message !== 'string' || !message.trim()) throw new ConsoleError('INVALID_REQUEST', 'Send a JSON body { "message": "…" } with a non-empty message.')
  const node = running(host, runId)
  const task = backgroundTaskOf(host, node)
  try {
    if (task?.run) return task.run.send(message)
    if (node.agent) return void node.agent.inbox.post(message)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    throw new ConsoleError(code === 'NOT_RUNNING' || code === 'DISPOSED' ? 'NOT_RUNNING' : code === 'STEER_UNSUPPORTED' ? 'NOT_STEERABLE' : 'INVALID_REQUEST', describeError(error))
  }
  throw new ConsoleError('NOT_STEERABLE', `Run ${runId} (${node.provider}) was started synchronously by its parent's tool call, which holds its only handle; start it with a background tool load to message it here.`)
}

function running(host: ViewHost, runId: string) {
  const node = host.store.nodes.get(runId)
  if (!node) throw new ConsoleError('NOT_FOUND', `No run ${runId} in the console (it never started, or its tree was dropped: maxTrees).`)
  if (node.root) throw new ConsoleError('NOT_CANCELLABLE', `${runId} is a root run; the console acts on delegated children only (stop a root run where it was started).`)
  if (node.endedAt !== undefined) throw new ConsoleError('NOT_RUNNING', `Run ${runId} already ended (${node.stopReason}).`)
  return node
}
