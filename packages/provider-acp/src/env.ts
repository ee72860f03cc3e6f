import { CREDENTIAL_NAME } from './scrub.js'

/**
 * The child's environment: the host's minus credential-shaped names, then the configured
 * entries (`true` passes the host's value through, `false` removes the variable, a string sets
 * it), then `SUBAGENT_DEPTH`.
 */
export function childEnv(
  host: NodeJS.ProcessEnv,
  configured: Record<string, string | boolean>,
  depth: number,
): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(host)) {
    if (value === undefined || CREDENTIAL_NAME.test(name)) continue
    env[name] = value
  }
  for (const [name, value] of Object.entries(configured)) {
    if (value === false) {
      delete env[name]
    } else if (value === true) {
      if (host[name] !== undefined) env[name] = host[name]!
      else delete env[name]
    } else if (typeof value === 'string') {
      env[name] = value
    }
  }
  env.SUBAGENT_DEPTH = String(depth)
  return env
}
