/**
 * The environment policy of every child process we start (an ACP agent, a stdio MCP server),
 * modelled on Codex' `shell_environment_policy`: inherit (core | all | none) → drop excluded
 * variables → apply the configured `env`. Callers add their own variables after `policyEnv`.
 */
/**
 * Every crossing variable (`SUBAGENT_*`, crossing/crossing.ts) starts with this. A host's own are never
 * inherited by its children (they describe this host's tree); a child's are set by its parent after the policy.
 */
export const CROSSING_ENV_PREFIX = 'SUBAGENT_'

export type EnvInherit = 'core' | 'all' | 'none'

/** What `inherit: core` passes: what a shell, a terminal program and an `npx`-launched child need. */
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
 * Exact names the built-in excludes match by accident: paths and session descriptions, not
 * credentials (`*PWD*` matches the working directory). They are inherited like any other name,
 * and their values are never scrubbed from text (a scrubbed `PWD` turned every path into
 * `[redacted]/…`, a scrubbed `XDG_SESSION_CLASS=user` every word "user"). `envExclude` still
 * drops them when configured.
 */
export const NOT_SECRET_NAMES: readonly string[] = [
  'PWD', 'OLDPWD', 'HOME', 'XDG_SESSION_ID', 'XDG_SESSION_TYPE', 'XDG_SESSION_CLASS', 'XDG_SESSION_DESKTOP', 'DESKTOP_SESSION',
]

/**
 * A value holding a URL with credentials: any user info (`scheme://user:password@`,
 * `scheme://:password@`, or a token alone, `https://ghp_…@github.com`).
 */
const URL_USERINFO = /[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s/@]{1,1024}@/
/** A proxy setting without a scheme that starts with user info (`user:password@proxy:3128`, as curl and Go accept it). */
const PROXY_NAME = /proxy/i
const BARE_USERINFO = /^[^\s/@]{1,1024}@/

export interface EnvPolicy {
  inherit: EnvInherit
  /** Extra exclude globs on top of `DEFAULT_EXCLUDE` (these apply to `NOT_SECRET_NAMES` too). */
  exclude: readonly string[]
  /** The configured `env`: a string sets, `true` passes the host's value through, `false` removes. */
  set: Record<string, string | boolean>
}

function globToRegExp(glob: string): RegExp {
  const body = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')
  return new RegExp(`^${body}$`, 'i')
}

const CORE = CORE_ENV.map(globToRegExp)
const BUILT_IN_EXCLUDE = DEFAULT_EXCLUDE.map(globToRegExp)
const NOT_SECRET = new Set(NOT_SECRET_NAMES)

/** Compiled name matchers, shared by the env builder and the redactor's secret list. */
export class EnvMatcher {
  private readonly exclude: RegExp[]

  constructor(exclude: readonly string[] = []) {
    this.exclude = exclude.map(globToRegExp)
  }

  isCore(name: string): boolean {
    return CORE.some((pattern) => pattern.test(name))
  }

  /**
   * Excluded by name (the built-in list, minus `NOT_SECRET_NAMES`, plus the configured globs), or by a value carrying URL
   * credentials (a proxy setting's too when it has no scheme).
   */
  isExcluded(name: string, value: string): boolean {
    if (this.exclude.some((pattern) => pattern.test(name)) || URL_USERINFO.test(value)) return true
    if (PROXY_NAME.test(name) && BARE_USERINFO.test(value)) return true
    return !NOT_SECRET.has(name) && BUILT_IN_EXCLUDE.some((pattern) => pattern.test(name))
  }
}

/**
 * The environment the policy gives a child: the inherited part (per `inherit`, minus excluded
 * variables and the host's own `SUBAGENT_*` crossing variables, which describe this host's tree),
 * then the configured entries.
 */
export function policyEnv(host: NodeJS.ProcessEnv, policy: EnvPolicy, matcher = new EnvMatcher(policy.exclude)): Record<string, string> {
  const env: Record<string, string> = {}
  if (policy.inherit !== 'none') {
    for (const [name, value] of Object.entries(host)) {
      if (value === undefined || name.startsWith(CROSSING_ENV_PREFIX)) continue
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
  return env
}

/**
 * Values to scrub from diagnostics and logs: every host variable the policy excludes (whether
 * or not it is passed through explicitly) and every configured value whose name is excluded.
 */
export function excludedValues(host: NodeJS.ProcessEnv, policy: EnvPolicy, matcher = new EnvMatcher(policy.exclude)): string[] {
  const values: string[] = []
  for (const [name, value] of Object.entries(host)) {
    if (value !== undefined && matcher.isExcluded(name, value)) values.push(value)
  }
  for (const [name, value] of Object.entries(policy.set)) {
    if (typeof value === 'string' && matcher.isExcluded(name, value)) values.push(value)
  }
  return values
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
