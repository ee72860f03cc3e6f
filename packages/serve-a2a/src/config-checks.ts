// The checks of a config past its schema, made at load (before the service registers its start): a refused config
// fails the load with INVALID_CONFIG or MISSING_CREDENTIAL and never starts.
import { bindRefusal } from '@cordis-subagents/shared'
import type { Config } from './config.js'
import { ServeA2aError } from './errors.js'

export function checked(config: Config): Config {
  const refused = bindRefusal({ host: config.host, credential: config.auth !== 'none', allowRemote: config.allowRemote })
  if (refused) {
    const none = config.auth === 'none' ? 'auth: none is only allowed on a loopback bind (127.0.0.1, ::1, localhost): ' : ''
    throw new ServeA2aError('INVALID_CONFIG', `${none}${refused}`)
  }
  if (config.maxStoredTasks < config.maxConcurrentTasks) {
    throw new ServeA2aError('INVALID_CONFIG', `maxStoredTasks (${config.maxStoredTasks}) must be at least maxConcurrentTasks `
      + `(${config.maxConcurrentTasks}): a running task is never evicted.`)
  }
  if (config.publicUrl !== undefined) {
    let url: URL | undefined
    try {
      url = new URL(config.publicUrl)
    } catch {}
    if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
      throw new ServeA2aError('INVALID_CONFIG',
        `publicUrl must be an http(s) URL without credentials, query or fragment, got ${JSON.stringify(config.publicUrl)}.`)
    }
  }
  return config
}

export function sharedUrlOf(config: Config, env: NodeJS.ProcessEnv): string | undefined {
  const { url, urlFromEnv } = config.shared ?? {}
  if (url && urlFromEnv) {
    throw new ServeA2aError('INVALID_CONFIG', 'shared: give the connection URL once, in `url` or in `urlFromEnv`, not both.')
  }
  const value = urlFromEnv ? env[urlFromEnv] : url
  if (urlFromEnv && !value) {
    throw new ServeA2aError('MISSING_CREDENTIAL', `shared.urlFromEnv: the environment variable ${urlFromEnv} is not set (or empty); `
      + 'set it to the PostgreSQL URL, or remove `shared`.')
  }
  if (value !== undefined && !/^postgres(ql)?:\/\/./.test(value)) {
    throw new ServeA2aError('INVALID_CONFIG', 'shared: the connection URL must start with postgres:// or postgresql:// '
      + '(its value is not shown).')
  }
  return value || undefined
}
