/**
 * Names of tools and providers: 1-64 of `A-Z a-z 0-9 _ -`. One rule for both, so a provider
 * name is always a valid tool name and the model-facing APIs accept every name we register.
 */
export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

/** The rule in words, for error messages. */
export const NAME_RULE = '1-64 of A-Z a-z 0-9 _ -'

export function isName(value: unknown): value is string {
  return typeof value === 'string' && NAME_PATTERN.test(value)
}
