/**
 * A stdio server's environment: inherit (core | all | none) → drop excluded names (credentials)
 * → apply the configured `env`. The same policy as provider-acp's children (a provider must not
 * be a dependency of this package, so the small policy is ours).
 */
export type EnvInherit = 'core' | 'all' | 'none'

/** What `inherit: core` passes: what a shell and an `npx`/`node`-launched server need. */
const CORE_ENV: readonly string[] = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_*', 'TERM', 'TMPDIR', 'TMP', 'TEMP', 'TZ', 'XDG_*',
  'NODE_PATH', 'NODE_EXTRA_CA_CERTS', 'NVM_DIR', 'COREPACK_HOME', 'npm_config_*', 'NPM_CONFIG_*',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy',
  'SYSTEMROOT', 'COMSPEC', 'PATHEXT', 'APPDATA', 'LOCALAPPDATA', 'USERPROFILE',
]

/** Never inherited (case-insensitive globs), whatever `inherit` says; `env: { NAME: true }` passes one explicitly. */
const DEFAULT_EXCLUDE: readonly string[] = [
  '*KEY*', '*TOKEN*', '*SECRET*', '*PASS*', '*PWD*', '*CREDENTIAL*', '*AUTH*', '*COOKIE*',
  '*JWT*', '*DSN*', '*WEBHOOK*', '*SESSION*', '*PRIVATE*', 'PAT', '*_PAT', 'PAT_*', '*_PAT_*',
  'OTEL_EXPORTER_OTLP*_HEADERS',
  // Our own crossing variables describe this host's tree, not the server's.
  'SUBAGENT_*',
]

/** A value holding URL credentials (`scheme://user:pass@`, `https://token@host`). */
const URL_USERINFO = /[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s/@]{1,1024}@/

export interface EnvPolicy {
  inherit: EnvInherit
  exclude: readonly string[]
  /** A string sets, `true` passes the host's value through, `false` removes. */
  set: Record<string, string | boolean>
}

function globs(patterns: readonly string[]): RegExp[] {
  return patterns.map((glob) => new RegExp(`^${glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 'i'))
}

const CORE = globs(CORE_ENV)

export function serverEnv(host: NodeJS.ProcessEnv, policy: EnvPolicy): Record<string, string> {
  const exclude = globs([...DEFAULT_EXCLUDE, ...policy.exclude])
  const env: Record<string, string> = {}
  if (policy.inherit !== 'none') {
    for (const [name, value] of Object.entries(host)) {
      if (value === undefined) continue
      if (policy.inherit === 'core' && !CORE.some((pattern) => pattern.test(name))) continue
      if (exclude.some((pattern) => pattern.test(name)) || URL_USERINFO.test(value)) continue
      env[name] = value
    }
  }
  for (const [name, value] of Object.entries(policy.set)) {
    if (value === false) delete env[name]
    else if (value === true) {
      if (host[name] !== undefined) env[name] = host[name]!
    } else env[name] = value
  }
  return env
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
