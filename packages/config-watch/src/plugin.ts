import type { Context } from 'cordis'
import { emitIsolated } from '@cordis-subagents/shared'
import { Config } from './config.js'
import { watchFile } from './file-watcher.js'
import { cordisLoader, type LoaderView } from './loader-view.js'
import { logText, namedList } from './log-lines.js'
import { type CheckResult, Reloader, type Reloading } from './reloader.js'
import { oneLine } from './validate.js'

declare module 'cordis' {
  interface Events {
    /** A changed, valid config file is about to be applied. */
    'config-watch/reloading'(info: Reloading): void
    /** The outcome of each look at the file after it changed on disk. */
    'config-watch/checked'(result: CheckResult): void
  }
}

export const name = 'config-watch'
export const inject = ['loader']

/**
 * Watches the config file of the app's `@cordisjs/loader` and reloads the entries a save changed.
 * A save that leaves the file as it runs is ignored; an invalid save is logged and changes nothing.
 */
export function apply(ctx: Context, config: Config) {
  const logger = ctx.logger('config-watch')
  const loader = cordisLoader(ctx.get('loader'))
  const stopped = new AbortController()
  let close: (() => void) | undefined
  ctx.on('dispose', () => {
    stopped.abort()
    close?.()
  })

  const start = () => {
    if (close || stopped.signal.aborted || !loader.file) return
    close = watchLoaderFile(ctx, loader, loader.file.name, config, logger, stopped.signal)
  }
  // Loaded before the loader has started (`ctx.plugin(Loader); ctx.plugin(watch); ctx.start()`),
  // the file is not known yet: the loader sets the `env` service right after finding it.
  start()
  if (close) return
  const stopListening = ctx.on('internal/service', () => {
    start()
    if (close) stopListening()
  })
}

// What a log line shows of each entry id or package name, each plugin error, a rejected save's reason (characters).
const NAME_CHARS = 100
const ERROR_CHARS = 300
const REASON_CHARS = 600

function watchLoaderFile(ctx: Context, loader: LoaderView, file: string, config: Config, logger: ReturnType<Context['logger']>, signal: AbortSignal) {
  // A listener that throws neither stops the others nor the watching.
  const listenerFailed = (error: unknown) => logger.warn('a config-watch listener failed (ignored): %s', oneLine(error))
  const reloader = new Reloader(ctx, loader, file, {
    maxBytes: config.maxBytes,
    settleTimeout: config.settleTimeout,
    onReloading: (info) => {
      logger.info('%s changed: reloading %s', file, namedList(info.changed, NAME_CHARS))
      emitIsolated(ctx, 'config-watch/reloading', [info], listenerFailed)
    },
    onWithoutId: (names) => {
      logger.warn('%s: %s without an id restart at every reload; give each entry an id', file, namedList(names, NAME_CHARS))
    },
  }, signal)

  let running = false
  let again = false
  const look = async () => {
    if (running) {
      again = true
      return
    }
    running = true
    try {
      do {
        again = false
        const result = await reloader.check().catch((error: unknown): CheckResult => ({ status: 'rejected', file, code: 'CONFIG_UNREADABLE', reason: oneLine(error) }))
        if (signal.aborted) return
        report(result)
        emitIsolated(ctx, 'config-watch/checked', [result], listenerFailed)
      } while (again && !signal.aborted)
    } finally {
      running = false
    }
  }
  const report = (result: CheckResult) => {
    if (result.status === 'unchanged') return logger.debug('%s: saved without a change', file)
    if (result.status === 'applied') {
      if (result.errors.length) {
        const errors = namedList(result.errors, ERROR_CHARS, ' | ')
        logger.warn('%s reloaded, with errors (the entries named stay stopped until the file is fixed): %s', file, errors)
      }
      return
    }
    const reason = logText(result.reason, REASON_CHARS)
    if (result.code === 'CONFIG_UNREADABLE') {
      return logger.info('%s cannot be read (%s): the running configuration is kept until it is back', file, reason)
    }
    const where = result.line ? `:${result.line}` : ''
    logger.warn('%s%s: %s [%s]. The running configuration is kept; fix the file and save it again.', file, where, reason, result.code)
  }

  const watcher = watchFile(file, () => void look(), {
    debounce: config.debounce,
    retryDelay: config.retryDelay,
    onError: (error) => logger.warn('watching %s failed (%s); watching again in %d ms', file, oneLine(error), config.retryDelay),
  })
  logger.debug('watching %s', file)
  return () => watcher.close()
}
