import type { SubagentProvider } from '@cordis-subagents/subagents-service'

/** The model-facing description of a delegation tool, derived from what its provider's child can see. */
export function describeTool(provider: Pick<SubagentProvider, 'inheritsParentContext' | 'description'>, background = false): string {
  const lines = provider.inheritsParentContext
    ? [
      'Delegate a task to a subagent that starts with a copy of this conversation\'s completed turns',
      '(everything before your current turn; it does not see the turn you are in now) and works on its own.',
      'It already knows that earlier context, so the prompt only needs what is new: the task, and anything',
      'from your current turn it needs (tool results, decisions, files you just looked at).',
    ]
    : [
      'Delegate a self-contained task to a subagent that works on its own.',
      'The subagent does not see this conversation: the prompt must be a complete, standalone brief with every',
      'fact, file path, constraint and the exact form of answer you want back.',
    ]
  lines.push(
    'Only its final answer comes back to you; its intermediate steps and tool calls do not.',
    'Use it for work you can hand off whole (research, a focused change, a check). To run several at once,',
    'call this tool several times in the same step. Do not delegate what you can do yourself in a step or two.',
  )
  if (background) {
    lines.push(
      'It runs in the background: the call returns at once with a handle (bg-1, bg-2, ...) and you keep working;',
      'the answer is delivered to you later, exactly once.',
    )
  }
  const text = lines.join(' ')
  const about = provider.description?.trim().replace(/[.\s]+$/, '')
  return about ? `${text} Runs on: ${about}.` : text
}

export function describePrompt(provider: Pick<SubagentProvider, 'inheritsParentContext'>): string {
  return provider.inheritsParentContext
    ? 'What the subagent should do now. It already has the earlier turns of this conversation; include anything from your current turn that it needs.'
    : 'The complete, standalone task for the subagent. It sees nothing but this text, so include all context it needs.'
}

export const LABEL_DESCRIPTION = 'A short label (3-10 words) for this delegation, shown in progress displays.'
