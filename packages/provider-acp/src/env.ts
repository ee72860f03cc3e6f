/**
 * The child's environment: the shared env policy (packages/shared `env-policy`: inherit → excludes
 * → the configured `env`), then our own `SUBAGENT_*` variables. `childEnv` is the one place the
 * final env is assembled.
 */
import { type CROSSING_ENV_PREFIX, EnvMatcher, type EnvPolicy, excludedValues, policyEnv } from '@cordis-subagents/shared'

export { EnvMatcher, type EnvInherit, envProblem, type EnvPolicy } from '@cordis-subagents/shared'

/** Variables the provider sets for the child (SUBAGENT_DEPTH, SUBAGENT_ALLOWED_TOOLS, …): never filtered by the policy. */
export type OwnVariables = Record<`${typeof CROSSING_ENV_PREFIX}${string}`, string>

/** The policy's environment, then our own `SUBAGENT_*` variables, which nothing can filter out. */
export function childEnv(
  host: NodeJS.ProcessEnv,
  policy: EnvPolicy,
  own: OwnVariables,
  matcher = new EnvMatcher(policy.exclude),
): Record<string, string> {
  return Object.assign(policyEnv(host, policy, matcher), own)
}

/** Values to scrub from diagnostics and logs (see `excludedValues`). */
export const secretValues: typeof excludedValues = excludedValues
