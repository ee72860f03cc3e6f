import { describeError } from '@cordis-subagents/shared'
import {
  type ProviderStartRequest, type RunRecord, SubagentError, type SubagentResult, type SubagentRun,
} from '@cordis-subagents/subagents-service'
import { A2aError } from './errors.js'
import { acceptedThenEnded } from './opening.js'
import { A2aRun } from './run.js'
import type { RunSettings } from './run-settings.js'

/**
 * One delegation to a remote A2A agent. `start` fulfils once the remote accepted the task (its
 * first event, or the send's answer): the task id is the run's `childId`. From then on the run
 * follows the task (stream, or polls) to a final state, or parks when the task asks us
 * (input-required / auth-required: result `pending`); `resume(answer)` sends the answer on the same
 * task and follows it again. Cancel sends `CancelTask`; dispose cancels a task still running or
 * waiting, stops every request of the run and waits for them. Once handed over, the run is its
 * holder's alone: the provider's dispose (a reload) stops only runs still starting; a run outliving
 * it keeps the provider's send connections (`settings.hold`) until its own dispose.
 */
export async function startA2aRun(
  settings: RunSettings, request: ProviderStartRequest, record?: RunRecord, continuing?: { contextId: string },
): Promise<SubagentRun> {
  const { signal } = request
  if (signal.aborted) throw abortedStart('before the provider started it')
  const release = settings.hold()
  if (!release) throw disposedProvider(settings.agentName, continuing !== undefined)
  const a2a = new A2aRun(settings, request, (update) => request.onUpdate?.(update), continuing)
  settings.starting.add(a2a)
  // The run lets go of the provider's connections once disposed: it may outlive the provider's load.
  const dispose = () => a2a.dispose().finally(release)
  try {
    if (record) await a2a.reattach(record)
    else await a2a.open()
  } catch (error) {
    settings.starting.delete(a2a)
    await release()
    throw error
  }
  // From here the run is not the provider's to stop: it is handed over (or disposed just below).
  settings.starting.delete(a2a)
  // Aborted or stopped after the send went out, and the remote named its task meanwhile: cancel it.
  if (signal.aborted || a2a.stopped) {
    await dispose()
    throw acceptedThenEnded(settings.agentName, a2a.stopped ? 'stop' : 'abort', a2a.view)
  }
  // The signal aborting is a cancel; once the run is over nothing listens.
  const onAbort = () => a2a.cancel(reasonOf(signal.reason))
  signal.addEventListener('abort', onAbort, { once: true })
  const track = (result: SubagentResult) => {
    if (result.stopReason !== 'pending') signal.removeEventListener('abort', onAbort)
    return result
  }
  let disposal: Promise<void> | undefined
  const run: SubagentRun = {
    id: request.runId,
    result: a2a.follow().then(track),
    cancel: (reason) => a2a.cancel(reason),
    resume: (answer) => a2a.resume(answer).then(track),
    checkpoint: () => a2a.checkpoint(),
    // A new task in the same context on the same agent host, so the remote sees the earlier task's conversation.
    continueWith: (message, next) => {
      const contextId = a2a.view.contextId
      if (!contextId) {
        return Promise.reject(new SubagentError('UNSUPPORTED', `The remote agent ${settings.agentName} gave run ${request.runId} no context id, so a follow-up would not see its earlier task; delegate a new task instead.`))
      }
      return startA2aRun(settings, { ...next, prompt: message }, undefined, { contextId })
    },
    dispose: () => disposal ??= (signal.removeEventListener('abort', onAbort), dispose()),
  }
  if (a2a.view.taskId) run.childId = a2a.view.taskId
  return run
}

/** A start, restore or continue on a provider whose plugin was disposed (reloaded, removed, stopped): nothing was sent. */
function disposedProvider(agent: string, continuing: boolean): A2aError {
  const refused = continuing ? 'takes no follow-up of its runs (a follow-up is a new task there); delegate it as a new task' : 'starts no new task'
  return new A2aError('ABORTED', `The provider of the remote agent ${agent} was disposed (its plugin was reloaded, removed or stopped) `
    + `and ${refused}; nothing was sent. Runs it had handed over keep going under their holders.`)
}

function abortedStart(when: string): SubagentError {
  return new SubagentError('ABORTED', `The delegation was aborted ${when}; no child is running.`)
}

function reasonOf(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  return typeof reason === 'string' ? reason : describeError(reason)
}
