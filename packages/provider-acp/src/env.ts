/**
 * The child's environment policy, modelled on Codex' `shell_environment_policy`:
 * inherit (core | all | none) → drop excluded variables → apply the configured `env` →
 * set our own `SUBAGENT_*` variables. `childEnv` is the one place the final env is assembled.
 */
import { CROSSING_ENV_PREFIX } from '@cordis-subagents/shared'

export type EnvInherit = 'core' | 'all' | 'none'

/** What `inherit: core` passes: what a shell, a terminal program and an `npx`-launched agent need. */
export const CORE_ENV: readonly string[] = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_*', 'TERM', 'COLORTERM',
  'TMPDIR', 'TMP', 'TEMP', 'TZ', 'XDG_*',
  'NODE_PATH', 'NODE_EXTRA_CA_CERTS', 'NVM_DIR', 'COREPACK_HOME', 'npm_config_*', 'NPM_CONFIG_*',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy',
  'SYSTEMROOT', 'COMSPEC', 'PATHEXT', 'APPDATA', 'LOCALAPPDATA', 'USERPROFILE',
]

/**
 * Names never inherited (case-insensitive globs), whatever `inherit` says; only an explicit
 * `env: { NAME: true }` passes one through. `*_PAT` and friends rather than `*PAT*`, which would
 * match PATH.
 */
export const DEFAULT_EXCLUDE: readonly string[] = [
  '*KEY*', '*TOKEN*', '*SECRET*', '*PASS*', '*PWD*', '*CREDENTIAL*', '*AUTH*', '*COOKIE*',
  '*JWT*', '*DSN*', '*WEBHOOK*', '*SESSION*', '*PRIVATE*', 'PAT', '*_PAT', 'PAT_*', '*_PAT_*',
  // OpenTelemetry exporter headers usually carry a collector's API key (`x-honeycomb-team=…`).
  'OTEL_EXPORTER_OTLP*_HEADERS',
]

/**
 * A value holding a URL with credentials: any user info (`scheme://user:password@`,
 * `scheme://:password@`, or a token alone, `https://ghp_…@github.com`).
 */
const URL_USERINFO = /[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s/@]{1,1024}@/

/** Our own variables: always set by the provider, never filtered by the policy. */
const OWN_PREFIX: typeof CROSSING_ENV_PREFIX = CROSSING_ENV_PREFIX

export interface EnvPolicy {
  inherit: EnvInherit
  /** Extra exclude globs on top of `DEFAULT_EXCLUDE`. */
  exclude: readonly string[]
  /** The configured `env`: a string sets, `true` passes the host's value through, `false` removes. */
  set: Record<string, string | boolean>
}

/** Variables the provider sets for the child (SUBAGENT_DEPTH, SUBAGENT_ALLOWED_TOOLS, …). */
export type OwnVariables = Record<`${typeof OWN_PREFIX}${string}`, string>

function globToRegExp(glob: string): RegExp {
  const body = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')
  return new RegExp(`^${body}$`, 'i')
}

/** Compiled name matchers, shared by the env builder and the redactor's secret list. */
export class EnvMatcher {
  private readonly core: RegExp[]
  private readonly exclude: RegExp[]

  constructor(exclude: readonly string[] = []) {
    this.core = CORE_ENV.map(globToRegExp)
    this.exclude = [...DEFAULT_EXCLUDE, ...exclude].map(globToRegExp)
  }

  isCore(name: string): boolean {
    return this.core.some((pattern) => pattern.test(name))
  }

  /** Excluded by name, or by a value that carries URL credentials. */
  isExcluded(name: string, value: string): boolean {
    return this.exclude.some((pattern) => pattern.test(name)) || URL_USERINFO.test(value)
  }
}

/** How a name may not look: empty, or holding `=` (it would split into another name and value) or NUL (it would cut the entry). */
const BAD_NAME = /[=\0]/

/**
 * What is wrong with the configured `env`, or undefined: every name must be usable as a variable
 * name, every value a string without NUL, `true` or `false`. Checked at load, so a bad entry fails
 * the plugin instead of becoming something else in the child (`"A=B": "C"` would set `A` to `B=C`).
 */
export function envProblem(set: unknown): string | undefined {
  if (!set || typeof set !== 'object' || Array.isArray(set)) return 'env must be an object of NAME: value entries.'
  for (const [name, value] of Object.entries(set)) {
    const shown = JSON.stringify(name)
    if (!name || BAD_NAME.test(name)) {
      return `env has an invalid variable name ${shown}: a name must be non-empty and contain neither "=" nor NUL. Remove the entry or rename it.`
    }
    if (typeof value === 'string' ? value.includes('\0') : typeof value !== 'boolean') {
      return `env.${name} must be a string without NUL, true (pass the host's value through) or false (remove it).`
    }
  }
  return undefined
}

/**
 * The child's environment: the inherited part (per `inherit`, minus excluded variables), then
 * the configured entries, then our own `SUBAGENT_*` variables, which nothing can filter out.
 */
export function childEnv(
  host: NodeJS.ProcessEnv,
  policy: EnvPolicy,
  own: OwnVariables,
  matcher = new EnvMatcher(policy.exclude),
): Record<string, string> {
  const env: Record<string, string> = {}
  if (policy.inherit !== 'none') {
    for (const [name, value] of Object.entries(host)) {
      if (value === undefined || name.startsWith(OWN_PREFIX)) continue
      if (policy.inherit === 'core' && !matcher.isCore(name)) continue
      if (matcher.isExcluded(name, value)) continue
      env[name] = value
    }
  }
  for (const [name, value] of Object.entries(policy.set)) {
    if (value === false) {
      delete env[name]
    } else if (value === true) {
      if (host[name] !== undefined) env[name] = host[name]!
      else delete env[name]
    } else if (typeof value === 'string') {
      env[name] = value
    }
  }
  Object.assign(env, own)
  return env
}

/**
 * Values to scrub from diagnostics and logs: every host variable the policy excludes (whether
 * or not it is passed through explicitly) and every configured value whose name is excluded.
 */
export function secretValues(host: NodeJS.ProcessEnv, policy: EnvPolicy, matcher = new EnvMatcher(policy.exclude)): string[] {
  const values: string[] = []
  for (const [name, value] of Object.entries(host)) {
    if (value !== undefined && matcher.isExcluded(name, value)) values.push(value)
  }
  for (const [name, value] of Object.entries(policy.set)) {
    if (typeof value === 'string' && matcher.isExcluded(name, value)) values.push(value)
  }
  return values
}
