import type { Context } from 'cordis'
import type { Agent, BudgetLimits } from '@cordis-subagents/agent'
import type { ToolResult } from '@cordis-subagents/tools'
import { capForRedaction, describeBreach, describeError, onAbort, type PendingQuestion, peerText } from '@cordis-subagents/shared'

export interface CallOptions {
  /** The ctx.agents model of each call's root agent: the model spawn children run on unless their tool load names one. */
  model?: string
  /** This host's depth ceiling for the calls (the deployment's lower ceiling wins). */
  maxDepth?: number
  /** Limits of each call: its root run and every delegation below it. */
  budget?: BudgetLimits
}

/**
 * One call of a delegation tool from ChatLuna's agent. ChatLuna's agent is not an agent of ctx.agents,
 * so each call gets a root agent of its own (a served agent, like serve-mcp's: depth from the runtime's
 * root crossing, the configured budget under the deployment's), which is the parent of the delegation
 * and is disposed when the call ends. ChatLuna's abort signal (its stop, a timeout) cancels the child;
 * `stop` (our unload, or the tool's removal) aborts the call from our side.
 */
export async function runDelegation(
  ctx: Context,
  options: CallOptions,
  call: { name: string; input: Record<string, unknown>; id: string },
  signals: { chatluna?: AbortSignal; ours: AbortSignal },
): Promise<ToolResult> {
  const limits = ctx.agents.servedLimits({ maxDepth: options.maxDepth, budget: options.budget })
  if (limits.refusal) {
    const { depth, ceiling } = limits.refusal
    return { isError: true, content: `CHATLUNA_DEPTH_EXCEEDED: this host runs at depth ${depth}, deeper than the ceiling ${ceiling} of its delegation tree; nothing is delegated.` }
  }
  const agent: Agent = ctx.agents.createServed(limits, {
    label: 'chatluna',
    model: options.model,
    tools: ctx.tools.view(),
  })
  // Either side's abort, through listeners this call removes: `AbortSignal.any` would leave an entry on the tool's
  // long-lived signal for every call (Node 20 keeps a source's dependents until the source itself is collected).
  let signal = signals.ours
  let stopWaiting: Array<() => void> | undefined
  if (signals.chatluna) {
    const either = new AbortController()
    const abort = (source: AbortSignal) => () => either.abort(source.reason)
    stopWaiting = [onAbort(signals.chatluna, abort(signals.chatluna)), onAbort(signals.ours, abort(signals.ours))]
    signal = either.signal
  }
  try {
    const breach = agent.budget.exceeded() ?? agent.budget.check('toolCalls') ?? agent.budget.overtime()
    if (breach) return { isError: true, content: `CHATLUNA_BUDGET: a delegation from ChatLuna may not spend ${describeBreach(breach)}; nothing is delegated.` }
    agent.budget.charge('toolCalls', 1)
    const result = await ctx.tools.view({ allow: [call.name] }).execute({ id: call.id, name: call.name, input: call.input }, {
      agent,
      signal,
      toolCallId: call.id,
    })
    return unanswerable(result) ?? result
  } catch (error) {
    return { isError: true, content: `The delegation failed: ${describeError(error)}` }
  } finally {
    for (const stop of stopWaiting ?? []) stop()
    await agent.dispose().catch(() => {})
  }
}

/** The longest question text handed back to ChatLuna's agent (characters). */
const MAX_QUESTION_CHARS = 2000

/**
 * A child parked on a question (the call suspended, `questions: escalate`, or gave the question to its caller's
 * model, `answer`): a ChatLuna tool call cannot wait for an answer, and this call's root agent is disposed when it
 * returns, which ends the child. So ChatLuna's agent gets an error naming the question, never an empty result.
 */
function unanswerable(result: ToolResult): ToolResult | undefined {
  const question = (result.suspend?.question ?? (result.metadata?.stopReason === 'pending' ? result.metadata.question : undefined)) as
    PendingQuestion | undefined
  if (!question && !result.suspend) return undefined
  const raw = String(question?.text ?? '')
  const text = peerText(raw.length > MAX_QUESTION_CHARS ? `${capForRedaction(raw, MAX_QUESTION_CHARS)} [cut]` : raw)
  const options = question?.options?.length ? `\nOptions: ${question.options.slice(0, 16).map((option) => peerText(option.name).slice(0, 200)).join(', ')}.` : ''
  return {
    ...result,
    suspend: undefined,
    isError: true,
    content: 'CHATLUNA_QUESTION_UNANSWERABLE: the subagent asked a question, and a tool call from ChatLuna cannot wait for an answer, '
      + `so the subagent was stopped. Its question:\n${text}${options}\nCall the tool again with a prompt that answers it.`,
  }
}
