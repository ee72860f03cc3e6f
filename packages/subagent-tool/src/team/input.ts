import { z } from 'zod'
import { describePrompt, LABEL_DESCRIPTION } from '../wording.js'
import { AGENT_DESCRIPTION, outsideTeam } from './wording.js'

/**
 * The team tool's model-facing input: `{ agent, description, prompt }`, `agent` an enum of the
 * team's names (sorted). A name outside it is refused with the names listed.
 */
export function teamInput(team: readonly string[]) {
  const names = [...team] as [string, ...string[]]
  return z.strictObject({
    agent: z.enum(names, { error: (issue) => outsideTeam(issue.input, names) }).describe(AGENT_DESCRIPTION),
    description: z.string().trim().min(1, 'The description must not be empty.').max(120, 'The description must be at most 120 characters.').describe(LABEL_DESCRIPTION),
    prompt: z.string().min(1, { message: 'The prompt must not be empty.', abort: true })
      .refine((text) => text.trim().length > 0, 'The prompt must not be only whitespace.').describe(describePrompt({ inheritsParentContext: false })),
  })
}

export type TeamInput = z.infer<ReturnType<typeof teamInput>>
