// TEMPORARY until agent-park's askParentTool lands: removed at that merge.
import { newQuestionId } from '@cordis-subagents/shared'
import type { Tool } from '@cordis-subagents/tools'
import { z } from 'zod'

export function askParentTool(options: { name?: string } = {}): Tool<any> {
  return {
    name: options.name ?? 'ask_parent',
    description: 'Ask your parent a question and wait for the answer.',
    input: z.strictObject({ question: z.string().min(1) }),
    execute: ({ question }) => ({ content: '', suspend: { question: { id: newQuestionId(), kind: 'ask', text: question, path: [] } } }),
    resume: (answer) => ({ content: answer }),
  }
}
