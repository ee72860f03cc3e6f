import { z } from 'zod'
import { describePrompt, LABEL_DESCRIPTION } from './wording.js'

function buildInput(inheritsParentContext: boolean) {
  // Strict: a misspelt or extra field is reported to the model instead of silently dropped.
  return z.strictObject({
    description: z.string().trim().min(1, 'The description must not be empty.').max(120, 'The description must be at most 120 characters.').describe(LABEL_DESCRIPTION),
    prompt: z.string().min(1, { message: 'The prompt must not be empty.', abort: true })
      .refine((text) => text.trim().length > 0, 'The prompt must not be only whitespace.').describe(describePrompt({ inheritsParentContext })),
  })
}

const inputSchemas = new Map<boolean, ReturnType<typeof buildInput>>()

/** The model-facing input; one schema object per wording, so remounts reuse its JSON Schema. */
export function inputSchema(inheritsParentContext: boolean) {
  let schema = inputSchemas.get(inheritsParentContext)
  if (!schema) inputSchemas.set(inheritsParentContext, schema = buildInput(inheritsParentContext))
  return schema
}
