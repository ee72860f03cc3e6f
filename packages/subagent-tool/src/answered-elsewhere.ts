import { LimitError, type PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentOutcome, SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import type { OutcomeContext, OutcomeOptions } from './outcome-result.js'
import { answeredElsewhereText } from './wording.js'

type Format = (
  subagents: SubagentService, run: SubagentHandle, outcome: SubagentOutcome | undefined, options: OutcomeOptions, context: OutcomeContext,
) => ToolResult

/**
 * A child whose question the caller's model was given (answer mode) was answered by someone else
 * (a live page, the host by run id), or went on without an answer (`withdrawn`: whoever asked it
 * below ended unanswered): its next outcome comes to the caller as an inbox message,
 * formatted as the tool formats a result (another question included), with its usage and work.
 * The caller's turn waits for it (an inbox hold); an idle caller reads it on its next turn. The
 * tool's `timeout` bounds the child's work, as it bounds a reply's: past it the child is cancelled.
 */
export function passOnAnswered(
  subagents: SubagentService, run: SubagentHandle, next: Promise<SubagentOutcome>, question: PendingQuestion,
  options: OutcomeOptions, context: OutcomeContext, format: Format, withdrawn = false,
): void {
  const { inbox } = context.parent
  let release: () => void
  try {
    release = inbox.hold()
  } catch {
    // The caller is disposed: nobody is left to tell (the parked book ends the child).
    return
  }
  const startedAt = Date.now()
  const timer = options.timeout > 0 ? setTimeout(() => {
    // The held run, not a reattached call's handle (whose cancel does nothing).
    const held = subagents.parked.get(context.parent, run.id) ?? run
    const cancel = held.cancel as (reason?: string | Error) => void
    cancel(new LimitError('TIMEOUT', `the subagent tool's timeout of ${options.timeout} ms elapsed after its question was answered`))
  }, options.timeout) : undefined
  next.then((outcome) => {
    // A message cannot suspend: a further question goes to the caller's model again.
    const result = format(subagents, run, outcome, options, { ...context, durationMs: Date.now() - startedAt, canSuspend: false })
    inbox.post(answeredElsewhereText(run.id, question, result, withdrawn), { usage: result.usage, work: result.work })
  }).catch(() => {
    // The caller was disposed meanwhile, or its inbox is full: there is nobody to read it.
  }).finally(() => {
    clearTimeout(timer)
    release()
  })
}
