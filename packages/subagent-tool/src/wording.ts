import type { PendingQuestion } from '@cordis-subagents/shared'
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

/** What the caller's model reads when its child asks a question (`questions: answer`). */
export function questionText(runId: string, question: PendingQuestion, reply: string | undefined): string {
  const lines = [`Subagent ${runId} asks you a question and waits for your answer (it is parked; it does nothing meanwhile):`, '', question.text]
  if (question.options?.length) lines.push('', `Options: ${question.options.map((option) => `${option.id} (${option.name})`).join(', ')}.`)
  lines.push('', reply
    ? `Answer it with ${reply} { "handle": "${runId}", "answer": "…" }: that call returns the subagent's next result (its answer, or its next question). If you cannot answer it yourself, ask your own parent first if you can.`
    : 'You have no tool to answer it with.')
  return lines.join('\n')
}

/** How the model reads the rest of run `runId`'s output, after the `shown` bytes it has (the note of a cut result). */
export function readMoreText(verb: string, runId: string, shown: number): string {
  return `The whole output is kept: read the rest with ${verb} { "handle": "${runId}", "offset": ${shown} }.`
}

/**
 * The message that brings the caller a child's result after someone else answered its question,
 * or after it was withdrawn (whoever asked it below ended, so the child went on without an answer).
 */
export function answeredElsewhereText(
  runId: string, question: PendingQuestion, result: { content: string; isError?: boolean }, withdrawn = false,
): string {
  const asked = JSON.stringify(question.text.slice(0, 200))
  const how = withdrawn
    ? 'was withdrawn (whoever asked it ended without an answer, and the subagent went on without one); do not answer it.'
    : 'was answered by someone else (not through your reply); do not answer it again.'
  return [
    `[Subagent ${runId}: its question ${asked} ${how} Its next result${result.isError ? ' (a failure)' : ''} follows.]`,
    '',
    result.content,
  ].join('\n')
}
