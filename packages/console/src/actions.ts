import { describeError, MAX_ANSWER_LENGTH } from '@cordis-subagents/shared'
import { ConsoleError } from './errors.js'
import { backgroundTaskOf, CANCEL_REASON, type ViewHost } from './node-view.js'

/**
 * Cancels one running child: a background task (any provider) in its parent's book, so the book
 * records the cancel; any other child (spawn, fork, ACP, A2A) through `ctx.subagents.cancel`, as
 * the tool call holding it would. Its parent gets the result `aborted` and goes on.
 */
export function cancelRun(host: ViewHost, runId: string): void {
  const node = running(host, runId)
  const task = backgroundTaskOf(host, node)
  node.cancelledHere = true
  if (task?.live) return task.cancel(CANCEL_REASON)
  if (host.subagents.cancel(runId, CANCEL_REASON)) return
  node.cancelledHere = false
  throw new ConsoleError('NOT_RUNNING', `Run ${runId} is no longer live in the service (it is ending); its end shows shortly.`)
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

/**
 * Answers the question a parked child waits on, through `ctx.subagents.resume`: the run goes on
 * with the answer (its next outcome goes to whoever holds the run, as a resume from the host's
 * code would). Returns once the service took the answer; refusals come back as codes.
 */
export function answerRun(host: ViewHost, runId: string, answer: unknown, log: (error: unknown) => void): void {
  if (typeof answer !== 'string' || !answer.trim() || answer.length > MAX_ANSWER_LENGTH) {
    throw new ConsoleError('INVALID_REQUEST', `Send a JSON body { "answer": "…" } with a non-empty answer of at most ${MAX_ANSWER_LENGTH} characters.`)
  }
  const node = running(host, runId)
  const parked = host.subagents.pending().some((run) => run.runId === runId)
  if (!node.question && node.answered) {
    throw new ConsoleError('ALREADY_ANSWERED', `Run ${runId}'s question ${node.answered} was answered already; its result goes to the parent that waits for it.`)
  }
  if (!node.question || !parked) throw new ConsoleError('NOT_PARKED', `Run ${runId} is not waiting for an answer (it was answered, or it never asked).`)
  host.store.resumed(runId)
  // Its next outcome goes to the parent that waits for it (its tool call, or the root's turn: see agent.nextResult()).
  host.subagents.resume(runId, answer).catch(log)
}

function running(host: ViewHost, runId: string) {
  const node = host.store.nodes.get(runId)
  if (!node) throw new ConsoleError('NOT_FOUND', `No run ${runId} in the console (it never started, or its tree was dropped: maxTrees).`)
  if (node.root) throw new ConsoleError('NOT_CANCELLABLE', `${runId} is a root run; the console acts on delegated children only (stop a root run where it was started).`)
  if (node.endedAt !== undefined) throw new ConsoleError('NOT_RUNNING', `Run ${runId} already ended (${node.stopReason}).`)
  return node
}
