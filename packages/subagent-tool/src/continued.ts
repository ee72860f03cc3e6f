import type { Agent } from '@cordis-subagents/agent'
import type { SubagentHandle, SubagentOutcome, SubagentService, SubagentStart } from '@cordis-subagents/subagents-service'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import { type DeadlineQueue, describeError } from '@cordis-subagents/shared'
import { CallCancellation, settleCall } from './call.js'
import type { InFlight, OutcomeOptions } from './call-types.js'

// A call that goes on after its first outcome (off a plain delegation's road): a suspended call's
// resume or withdrawal, `subagent_reply`, and a run another verb (`subagent_continue`) started.

/**
 * Continues a parked child of `exec.agent` with an answer (a suspended call's `resume`, or
 * `subagent_reply`) and turns its next outcome into a tool result, as a first outcome would be.
 * A suspended call names the `questionId` it waits on: when that question was answered already
 * (by a page or the host by run id, or for another call of the same reattached task), the call
 * joins that answer and gets the child's outcome; nothing is answered twice. Without an answer
 * (`withdrawn`: the question was withdrawn, the child ended or went on without one) the call gets
 * the child's outcome. The tool's timeout runs again, in full, while the child works; the caller's abort cancels it.
 */
export async function continueParked(
  subagents: SubagentService, options: OutcomeOptions, runId: string, answer: string | undefined, exec: ToolExecContext,
  inFlight: Set<InFlight>, deadlines: DeadlineQueue | undefined, canSuspend: boolean, onParked?: (run: SubagentHandle) => void,
  questionId?: string,
): Promise<ToolResult> {
  const parent = exec.agent as Agent
  let answered: { run: SubagentHandle; next: Promise<SubagentOutcome> } | undefined
  try {
    if (typeof runId !== 'string') answered = undefined
    else if (answer === undefined) answered = questionId === undefined ? undefined : subagents.parked.withdrawn(parent, runId, questionId)
    else answered = subagents.parked.answer(parent, runId, answer, questionId)
  } catch (error) {
    const code = (error as { code?: string })?.code
    return { isError: true, content: `The answer was not passed on.\n\n${code ? `${code}: ` : ''}${describeError(error)}` }
  }
  if (!answered) {
    return { isError: true, content: `You have no parked subagent ${JSON.stringify(runId)}: it was answered already, ended, or is not yours.` }
  }
  const { run, next } = answered
  const call = new CallCancellation(options, exec, inFlight, deadlines)
  call.run = run as SubagentHandle & SubagentStart
  return settleCall(subagents, run, next, call, options, exec, performance.now(), canSuspend, onParked)
}

/**
 * Settles a run another verb started for the caller (a continue) as a call of the tool: the
 * caller's abort, the timeout (`options.timeout`) and the owner's unload (`inFlight`) cancel it;
 * its outcome is formatted as a first outcome would be. A question it asks comes back to the caller.
 */
export function settleStarted(
  subagents: SubagentService, run: SubagentHandle, options: OutcomeOptions, exec: ToolExecContext, inFlight: Set<InFlight>,
): Promise<ToolResult> {
  const call = new CallCancellation(options, exec, inFlight, undefined)
  call.run = run as SubagentHandle & SubagentStart
  return settleCall(subagents, run, run.result, call, options, exec, performance.now(), false)
}
