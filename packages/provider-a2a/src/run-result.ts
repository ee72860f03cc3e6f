import { capBytes, type Redactor } from '@cordis-subagents/shared'
import { capDiagnostic, type SubagentResult } from '@cordis-subagents/subagents-service'
import { questionOf } from './question.js'
import { isActive, isFinal, isInterrupted, outcomeOf, stateName } from './task-state.js'
import type { TaskView } from './task-view.js'

/** How one phase of a run ended, besides what its task view holds. */
export interface PhaseEnd {
  view: TaskView
  redactor: Redactor
  maxOutputBytes: number
  cancelGrace: number
  agentName: string
  cancelReason?: string
  graceExpired: boolean
  failure?: string
}

/**
 * The result of one phase, by the task view: a direct message or a final state by the states
 * table; a cancel asked for → aborted; an interrupted task asking us → `pending` with its
 * question; anything else lost the task → error. Output and diagnostic are redacted and capped;
 * the usage and work a remote of ours reported ride along.
 */
export function phaseResult(end: PhaseEnd): SubagentResult {
  const result = plainResult(end)
  const { typed, lastData } = end.view
  if (!typed || result.stopReason !== 'completed') return result
  // A data part is the answer when there is one, else the text parsed (a fenced block is fine). No correction round.
  let parsed: { value: unknown } | { problem: string }
  if (lastData === undefined) {
    parsed = typed.parse(result.output)
  } else {
    const problem = typed.check(lastData)
    parsed = problem ? { problem } : { value: lastData }
  }
  if ('value' in parsed) return { ...result, output: JSON.stringify(parsed.value), value: parsed.value }
  const headline = `The remote agent's answer does not match the output schema (a child over A2A gets no correction round): ${parsed.problem}.`
  return { ...result, stopReason: 'invalid_output', diagnostic: capDiagnostic(end.redactor.redact(result.diagnostic ? `${headline} ${result.diagnostic}` : headline)) }
}

function plainResult(end: PhaseEnd): SubagentResult {
  const { view, redactor, maxOutputBytes } = end
  const spend = view.spend
  const usage = {
    ...view.usage ? { usage: view.usage } : {},
    ...spend ? { work: { steps: spend.steps, toolCalls: spend.toolCalls, delegations: spend.delegations } } : {},
  }
  // Only a completed task (or a Message answer) answered: anything else keeps its artifacts, never a status text.
  const finish = (result: Omit<SubagentResult, 'output'> & { output?: string }) => {
    const { text, truncated } = view.output(result.stopReason === 'completed')
    const notes = truncated && result.output === undefined ? [`The output was cut at ${maxOutputBytes} bytes (maxOutputBytes).`] : []
    const diagnostic = [result.diagnostic, ...notes].filter(Boolean).join(' ')
    // The output is the remote's text too: redacted, and cut again (a mask may be longer than what it hides).
    const output = capBytes(redactor.redact(result.output ?? text), maxOutputBytes, '')
    return { ...result, output, ...diagnostic ? { diagnostic: capDiagnostic(redactor.redact(diagnostic)) } : {}, ...usage }
  }
  if (view.directMessage) return finish({ stopReason: 'completed' })
  const state = view.state
  if (state !== undefined && isFinal(state)) {
    const outcome = outcomeOf(state, view.statusText)
    const stopReason = outcome.stopReason === 'error' && view.refinedStop ? view.refinedStop : outcome.stopReason
    return finish({ stopReason, ...outcome.headline ? { diagnostic: `${outcome.headline} (task ${view.taskId})` } : {} })
  }
  if (end.cancelReason !== undefined) {
    const unconfirmed = end.graceExpired ? ` The remote did not confirm within ${end.cancelGrace} ms (cancelGrace); task ${view.taskId} was last ${stateName(state)}.` : ''
    return finish({ stopReason: 'aborted', diagnostic: `Cancelled: ${end.cancelReason}.${unconfirmed}` })
  }
  if (view.asking()) {
    // The question is the status text: not repeated as output.
    return finish({ stopReason: 'pending', output: '', question: questionOf(state, view.statusText, view.statusMeta, redactor) })
  }
  // The run cancels a task it gives up on while that still runs or waits (A2aRun.end), unless the remote said it is gone.
  const left = !view.taskId || !(isActive(state) || isInterrupted(state)) ? ''
    : view.gone ? ' The remote no longer knows it, so no CancelTask was sent.' : ' CancelTask was sent for it, so it does not run on.'
  return finish({
    stopReason: 'error',
    diagnostic: `Lost the remote task ${view.taskId} of ${end.agentName} (last state ${stateName(state)}): ${end.failure ?? 'it ended without a final state'}.${left}`,
  })
}
