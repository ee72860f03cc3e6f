import type { Express, NextFunction, Request, Response } from 'express'
import type { A2ARequestHandler } from '@a2a-js/sdk/server'
import { isRecord } from '@cordis-subagents/shared'
import { ANONYMOUS, type Credentials } from './auth.js'
import { CARD_PATH, JSONRPC_PATH } from './card.js'
import { cardRouterMaker } from './card-route.js'
import { refuse } from './errors.js'
import { paramsProblem } from './request-checks.js'
import type { ScopedUser } from './executor.js'
import type { RateLimiter, Slot, Subscriptions, TaskSlots } from './guards.js'

/** JSON-RPC methods that start a task (1.0 and 0.3 names). */
const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream'])
/** JSON-RPC methods that follow a task on a stream (1.0 and 0.3 names). */
const SUBSCRIBE_METHODS = new Set(['SubscribeToTask', 'tasks/resubscribe'])

export interface HttpGuards {
  credentials: Credentials
  /** Accepted Host values, lower case. */
  hosts: Set<string>
  /** Accepted Origin values, lower case. */
  origins: Set<string>
  rate: RateLimiter
  slots: TaskSlots
  subscriptions: Subscriptions
  maxBodyBytes: number
  requestHandler: A2ARequestHandler
  /** How many requests were refused, by code (for logs at debug level and tests; never the credential). */
  refused: Map<string, number>
  /** The host is stopping: every new request is refused (503 HOST_STOPPING), its connection closed after. */
  stopping: () => boolean
}

/** The express app and its drain. */
interface HttpApp {
  app: Express
  /** Resolves once every response in flight has ended, or after `ms` on the monotonic clock (a client that does not read). */
  drained: (ms: number) => Promise<void>
}

/** The express app at once (`appMaker` then its function). */
export async function createApp(guards: HttpGuards): Promise<HttpApp> {
  return (await appMaker())(guards)
}

/**
 * Loads express and the SDK's routers; the function it resolves with makes the express app without waiting. The server
 * makes the app once its port is bound (the accepted Host values and the card's URL name that port) and attaches it before
 * any request is read, so no request comes in without it.
 *
 * The app: every request's Host and Origin checked, the card public, JSON-RPC behind the
 * credential, the rate limit, the body cap and the task slots, then the SDK's JSON-RPC handler
 * (1.0, and 0.3 through its compat layer) with the caller's credential as the task owner.
 */
export async function appMaker(): Promise<(guards: HttpGuards) => HttpApp> {
  const [{ default: express }, { jsonRpcHandler }, cardRouter] = await Promise.all([
    import('express'),
    import('@a2a-js/sdk/server/express'),
    cardRouterMaker(),
  ])
  return (guards) => {
    const users = new WeakMap<Request, ScopedUser>()
    const count = (code: string) => guards.refused.set(code, (guards.refused.get(code) ?? 0) + 1)

    const open = new Set<Response>()
    const app = express()
    app.disable('x-powered-by')
    app.set('etag', false)
    app.use((req: Request, res: Response, next: NextFunction) => {
      if (guards.stopping()) {
        count('HOST_STOPPING')
        return refuse(res, 'HOST_STOPPING', 'Refused: this host is stopping and did not look at the request; send it to another host.', { Connection: 'close' })
      }
      open.add(res)
      res.once('close', () => open.delete(res))
      const host = (req.headers.host ?? '').toLowerCase()
      if (!guards.hosts.has(host)) {
        count('FORBIDDEN_HOST')
        return refuse(res, 'FORBIDDEN_HOST', 'Refused: this server does not answer to that Host (only to the names it is configured for: allowedHosts).')
      }
      const origin = req.headers.origin
      if (origin !== undefined && !guards.origins.has(origin.toLowerCase())) {
        count('FORBIDDEN_ORIGIN')
        return refuse(res, 'FORBIDDEN_ORIGIN', 'Refused: requests from this Origin are not allowed (allowedOrigins).')
      }
      next()
    })
    app.use(CARD_PATH, cardRouter(guards.requestHandler))

    app.use(JSONRPC_PATH, (req: Request, res: Response, next: NextFunction) => {
      let scope = ANONYMOUS
      if (guards.credentials.mode !== 'none') {
        const presented = guards.credentials.presented(req)
        const matched = presented === undefined ? undefined : guards.credentials.match(presented)
        if (!matched) {
          count('UNAUTHENTICATED')
          const expected = guards.credentials.mode === 'bearer' ? 'an Authorization: Bearer <token> header' : 'the API key header'
          return refuse(res, 'UNAUTHENTICATED', `Refused: ${presented === undefined ? 'no credential' : 'a credential that is not accepted'}; this server needs ${expected} (see its agent card's securitySchemes).`,
            guards.credentials.mode === 'bearer' ? { 'WWW-Authenticate': 'Bearer realm="a2a"' } : {})
        }
        scope = matched
      }
      if (!guards.rate.take(scope)) {
        count('RATE_LIMITED')
        return refuse(res, 'RATE_LIMITED', 'Refused: too many requests from this credential in the last minute (rateLimit); wait and retry.', { 'Retry-After': '60' })
      }
      users.set(req, user(scope))
      next()
    })
    app.use(JSONRPC_PATH, express.json({ limit: guards.maxBodyBytes, type: 'application/json' }))
    app.use(JSONRPC_PATH, (error: { type?: string }, _req: Request, res: Response, next: NextFunction) => {
      if (error?.type === 'entity.too.large') {
        count('BODY_TOO_LARGE')
        return refuse(res, 'BODY_TOO_LARGE', `Refused: the request body is larger than ${guards.maxBodyBytes} bytes (maxBodyBytes).`)
      }
      // The client went away mid-body (or was cut at requestTimeout): nobody to answer.
      if (error?.type === 'request.aborted') return
      if (error?.type === 'entity.parse.failed') {
        res.status(200).json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON.' } })
        return
      }
      next(error)
    })
    // One layer for the checks of a parsed request (each layer costs the router a path match per request).
    app.use(JSONRPC_PATH, (req: Request, res: Response, next: NextFunction) => {
      const body = isRecord(req.body) ? req.body : undefined
      // Before any task is read or started: a request the store could never keep is refused, not run.
      const problem = body && paramsProblem(body.params)
      if (problem) {
        count('INVALID_PARAMS')
        return refuse(res, 'INVALID_PARAMS', `Refused: ${problem}`)
      }
      const method = req.method === 'POST' && body ? body.method : undefined
      if (typeof method !== 'string') return next()
      if (SUBSCRIBE_METHODS.has(method)) return subscribe(req, res, next, body!)
      if (SEND_METHODS.has(method)) return send(req, res, next)
      next()
    })
    const subscribe = (req: Request, res: Response, next: NextFunction, body: Record<string, unknown>) => {
      const scope = users.get(req)!.userName
      const params = isRecord(body.params) ? body.params : {}
      const release = guards.subscriptions.take(scope, JSON.stringify([params.tenant ?? '', scope, params.id ?? '']))
      if (typeof release !== 'function') {
        count('TOO_MANY_SUBSCRIPTIONS')
        const which = { server: 'on this server (maxSubscriptions)', credential: 'for this credential (maxSubscriptionsPerCredential)', task: 'on this task (maxSubscriptionsPerTask)' }
        return refuse(res, 'TOO_MANY_SUBSCRIPTIONS', `Refused: ${release.limit} subscriptions are already open ${which[release.full]}; close one (or poll GetTask) and retry.`)
      }
      res.once('close', release)
      next()
    }
    const send = (req: Request, res: Response, next: NextFunction) => {
      const scoped = users.get(req)!
      const slot = guards.slots.take(scoped.userName)
      if (!('release' in slot)) {
        count('TOO_MANY_TASKS')
        return refuse(res, 'TOO_MANY_TASKS', `Refused: ${slot.limit} tasks are already running ${slot.full === 'server' ? 'on this server (maxConcurrentTasks)' : 'for this credential (maxTasksPerCredential)'}; try again later.`, { 'Retry-After': '1' })
      }
      // The executor claims the slot when the task starts; a send that never starts a task returns it here.
      let held: Slot | undefined = slot
      users.set(req, { ...scoped, claimSlot: () => { const taken = held; held = undefined; return taken } })
      res.once('close', () => held?.release())
      next()
    }
    app.use(JSONRPC_PATH, jsonRpcHandler({
      requestHandler: guards.requestHandler,
      userBuilder: async (req: Request) => users.get(req) ?? user(ANONYMOUS),
      legacyCompat: { enabled: true },
    }))
    app.use((_req: Request, res: Response) => refuse(res, 'NOT_FOUND', `Not found: this server answers ${CARD_PATH} (GET) and ${JSONRPC_PATH} (POST, JSON-RPC).`))
    // What a layer threw: a JSON-RPC internal error, never Express' default page (its stack trace names this host's files).
    app.use((_error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      if (res.headersSent) return void res.destroy()
      res.status(500).json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error.' } })
    })
    /** Resolves once every response in flight has ended, or after `ms` on the monotonic clock (a client that does not read). */
    const drained = (ms: number) => new Promise<void>((resolve) => {
      const deadline = performance.now() + ms
      const check = () => {
        if (!open.size || performance.now() >= deadline) return resolve()
        setTimeout(check, 10)
      }
      check()
    })
    return { app, drained }
  }
}

function user(scope: string): ScopedUser {
  return { isAuthenticated: scope !== ANONYMOUS, userName: scope }
}

