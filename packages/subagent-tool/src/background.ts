import type { Agent } from '@cordis-subagents/agent'
import type { DeadlineQueue } from '@cordis-subagents/shared'
import type { BackgroundTask, SubagentService, SubagentUpdate, TurnEndPolicy } from '@cordis-subagents/subagents-service'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import { type DelegateOptions, type DelegationInput, type InFlight, runDelegation } from './call.js'

/**
 * One call of a tool load in `mode: background`: hands the delegation to the parent's background
 * book (`ctx.subagents.background`) and returns at once with its handle. The delegation itself is
 * `runDelegation` on the task's own signal, so its result has exactly the synchronous format.
 */
export function startInBackground(
  subagents: SubagentService,
  options: DelegateOptions & { onTurnEnd: TurnEndPolicy },
  input: DelegationInput,
  exec: ToolExecContext,
  inFlight: Set<InFlight>,
  deadlines: DeadlineQueue | undefined,
): ToolResult {
  let task: BackgroundTask
  try {
    task = subagents.background.start({
      parent: exec.agent as Agent,
      label: input.description,
      provider: options.provider,
      onTurnEnd: options.onTurnEnd,
      turnSignal: exec.signal,
      execute: (job) => runDelegation(subagents, options, input, {
        signal: job.signal,
        agent: exec.agent,
        toolCallId: exec.toolCallId,
        onUpdate: (update) => job.onUpdate(update.data as SubagentUpdate),
      }, inFlight, deadlines, job.onStarted),
    })
  } catch (error) {
    const code = (error as { code?: string }).code
    return { isError: true, content: `Could not start the subagent in the background.\n\n${code ? `${code}: ` : ''}${(error as Error).message}` }
  }
  return {
    content: startedText(task, options.onTurnEnd, verbsSeenBy(exec.agent as Agent, subagents.background.verbs)),
    metadata: { background: true, handle: task.handle, provider: options.provider },
  }
}

/**
 * The control verbs, when the caller can call every one of them: a child does not see verbs that are
 * not `nested` (nor verbs its tool filter hides), and must not be told to use them.
 */
function verbsSeenBy(agent: Agent, verbs: VerbNames | undefined): VerbNames | undefined {
  if (!verbs) return undefined
  const tools = agent.tools as Agent['tools'] | undefined
  return tools && Object.values(verbs).every((name) => tools.has(name)) ? verbs : undefined
}

type VerbNames = Readonly<Record<'wait' | 'status' | 'cancel' | 'send', string>>

/** What the model reads right after a background start: the handle, how the result comes back, what it can do meanwhile. */
export function startedText(
  task: Pick<BackgroundTask, 'handle' | 'label'>,
  onTurnEnd: TurnEndPolicy,
  verbs: VerbNames | undefined,
): string {
  const lines = [
    `Started background subagent ${task.handle} (${JSON.stringify(task.label)}). It works on its own while you continue.`,
    verbs
      ? `Its result comes back exactly once: as the result of ${verbs.wait} if you wait for it, otherwise as a message marked [Background subagent ${task.handle} …] before one of your next steps.`
      : `Its result comes back as a message marked [Background subagent ${task.handle} …] before one of your next steps.`,
    onTurnEnd === 'wait'
      ? 'If you answer before it finishes, your turn waits for its result and you continue with it.'
      : 'If your turn ends before it finishes, its result arrives at the start of your next turn.',
  ]
  if (verbs) {
    lines.push(`Meanwhile: ${verbs.wait} { "handles": ["${task.handle}"] } collects it, ${verbs.status} shows progress, `
      + `${verbs.send} { "handle": "${task.handle}", "message": "…" } steers it, ${verbs.cancel} { "handle": "${task.handle}" } stops it.`)
  }
  return lines.join('\n')
}
