import type { RequestListener, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from './config.js'
import { ServeA2aError } from './errors.js'
import type { ServerLogs } from './logs.js'

// What A2aServer's start opens: the listening server and the push parts.

/** How often Node checks requests against `requestTimeout` and `headersTimeout` (its default, 30 s, let a 60 s limit cut at 90 s). */
const TIMEOUT_CHECK_MS = 1_000

/** Listens on the configured address; `serve` makes the request listener with the bound port, attached before any request is read. */
export function listen({ host, port, requestTimeout, maxConnections }: Config, serve: (port: number) => RequestListener): Promise<Server> {
  return import('node:http').then(({ createServer }) => new Promise<Server>((resolve, reject) => {
    const http = createServer({
      requestTimeout, headersTimeout: Math.min(30_000, requestTimeout), connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    })
    // Past it, Node closes each new connection as it arrives (half-open ones included).
    http.maxConnections = maxConnections
    http.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ServeA2aError('LISTEN_FAILED', `could not listen on ${host}:${port} (${error.code ?? error.message}); choose another port or host.`))
    })
    // 'listening' comes before the loop reads a connection. A listener that cannot be made fails the start, nothing left listening.
    http.listen(port, host, () => {
      try {
        http.on('request', serve((http.address() as AddressInfo).port))
        resolve(http)
      } catch (error) {
        http.close()
        reject(error)
      }
    })
  }))
}

type Log = (format: string, ...args: unknown[]) => void

/** The push sender and its store; a notification not delivered is counted in `stats` and warned under `logs`' budget. */
export async function pushParts(config: Config, logger: { debug: Log }, logs: Pick<ServerLogs, 'pushFailed'>, stats: Map<string, number>,
  isRunning: (key: string) => boolean) {
  const [{ GuardedPushSender }, { CappedPushStore }, { V03PushNotificationSerializer }] = await Promise.all([
    import('./push-sender.js'), import('./push-store.js'), import('@a2a-js/sdk/compat/v0_3/server'),
  ])
  const settings = { ...config.push, allowHosts: new Set(config.push.allowHosts.map((host) => host.replace(/^\[|\]$/g, '').toLowerCase())) }
  const count = (key: string, by = 1) => stats.set(key, (stats.get(key) ?? 0) + by)
  const store = new CappedPushStore({ ...settings, maxTasks: config.maxStoredTasks, isRunning, forgotten: (key) => sender.forget(key),
    deleted: (key, configId) => sender.forget(key, configId) })
  const sender = new GuardedPushSender(store, settings, (code, message, scope) => {
    count(code)
    logs.pushFailed(scope, code, message)
  }, () => count('delivered'), new V03PushNotificationSerializer(), (code, by, message) => {
    count(code, by)
    logger.debug('%s: %s', code, message)
  })
  return { store, sender }
}
