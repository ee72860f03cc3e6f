/**
 * A stdio server's environment: the shared env policy (packages/shared `env-policy`, the same as
 * provider-acp's children): inherit (core | all | none) → drop excluded names (credentials, the
 * host's `SUBAGENT_*`) → apply the configured `env`.
 */
import { type EnvPolicy, policyEnv } from '@cordis-subagents/shared'

export { type EnvInherit, type EnvPolicy } from '@cordis-subagents/shared'

export function serverEnv(host: NodeJS.ProcessEnv, policy: EnvPolicy): Record<string, string> {
  return policyEnv(host, policy)
}

/** Values never to log: every configured env string, and host values passed by `true`. */
export function secretsOf(host: NodeJS.ProcessEnv, policy: EnvPolicy, headers: Record<string, string>): string[] {
  const values = Object.values(headers)
  for (const [name, value] of Object.entries(policy.set)) {
    if (typeof value === 'string') values.push(value)
    else if (value === true && host[name] !== undefined) values.push(host[name]!)
  }
  return values
}
