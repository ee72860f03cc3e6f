import type { ProviderStartRequest, RunRecord, SubagentRun } from '@cordis-subagents/subagents-service'
import type { Endpoint } from './endpoint.js'
import type { EndpointPool } from './endpoint-pool.js'
import { A2aError } from './errors.js'
import { classifySend } from './host-failure.js'
import type { RunSettings } from './run-settings.js'
import { startA2aRun } from './start-run.js'
import { storedTaskId } from './remote-ids.js'
import { TaskRoute } from './task-route.js'

/** A run's settings but what each endpoint has of its own. */
export type PoolRunSettings = Omit<RunSettings, 'wire' | 'streaming' | 'agentName'>

/**
 * Starts a task on the pool: on the best endpoint (`pool.order()`), failing over to the next when
 * the host never took the request (a connect failure, or a 5xx other than 504 before any task id
 * came back), each endpoint at most once. Any other failure rejects as it is: the host may have
 * taken the task, and a task runs at most once. The run's `origin` is the host that took it.
 */
export async function startOnPool(pool: EndpointPool, base: PoolRunSettings, request: ProviderStartRequest): Promise<SubagentRun> {
  pool.refreshDue()
  const order = pool.order()
  if (!order.length) throw new A2aError('A2A_SEND_FAILED', `No agent host can take the task: no endpoint's agent card could be read yet (${lastErrors(pool, new Map())}). They are read again after their backoff.`)
  const tried = new Map<Endpoint, string>()
  for (const endpoint of order) {
    const route = new TaskRoute(pool, endpoint, base.pollInterval)
    const { card, agentName } = endpoint.loaded!
    endpoint.outstanding++
    let run: SubagentRun
    try {
      run = await startA2aRun({ ...base, wire: route, streaming: card.streaming, agentName }, request)
    } catch (error) {
      endpoint.outstanding--
      if (!(error instanceof A2aError) || error.code !== 'A2A_SEND_FAILED') throw error
      const failure = classifySend(route.lastExchange, error.cause ?? error)
      if (failure.hostDown) endpoint.markDown(`it did not take a task: ${failure.why}`)
      const earlier = [...tried].map(([host, why]) => `${host.host}: ${why}`)
      tried.set(endpoint, failure.why)
      // One endpoint (one URL, maybe a load balancer): its own error, as it always was.
      if (!failure.retryElsewhere || request.signal.aborted || pool.endpoints.length === 1) {
        throw earlier.length ? new A2aError(error.code, `${error.message} Failed over to it after: ${earlier.join('; ')}.`, { cause: error.cause }) : error
      }
      continue
    }
    return began(pool, endpoint, run)
  }
  throw new A2aError('A2A_SEND_FAILED', `No agent host took the task; each was tried once and none received it (${lastErrors(pool, tried)}). `
    + 'Check that the agent hosts are running and reachable; provider.endpoints() shows their health.')
}

/**
 * Reattaches a run a journal recorded (after a host restart) to its task: first on the endpoint
 * that took it (`checkpoint.endpoint`), then on the others (a task store shared behind several
 * hosts answers for any task). Rejects `A2A_RESTORE_FAILED` naming each endpoint's answer when
 * none knows the task, and at once (nothing sent) when the record names no task, or a task or
 * context id longer than `MAX_REMOTE_ID_CHARS`. Never starts a task.
 */
export async function restoreOnPool(
  pool: EndpointPool, base: PoolRunSettings, request: ProviderStartRequest, record: RunRecord,
): Promise<SubagentRun> {
  // A record that names no task, or ids no remote could have given us, is refused once, before any endpoint is asked.
  storedTaskId(record)
  pool.refreshDue()
  const recorded = (record.checkpoint as { endpoint?: unknown } | undefined)?.endpoint
  const order = pool.order()
  const owner = order.find((endpoint) => endpoint.url.href === recorded)
  const tried: string[] = []
  for (const endpoint of owner ? [owner, ...order.filter((other) => other !== owner)] : order) {
    const route = new TaskRoute(pool, endpoint, base.pollInterval)
    const { card, agentName } = endpoint.loaded!
    endpoint.outstanding++
    try {
      return began(pool, endpoint, await startA2aRun({ ...base, wire: route, streaming: card.streaming, agentName }, request, record))
    } catch (error) {
      endpoint.outstanding--
      if (!(error instanceof A2aError) || error.code !== 'A2A_RESTORE_FAILED' || pool.endpoints.length === 1) throw error
      tried.push(`${endpoint.host}: ${error.message}`)
    }
  }
  throw new A2aError('A2A_RESTORE_FAILED', `No agent host knows the task of run ${record.runId} (${tried.join('; ') || 'no endpoint\'s agent card could be read yet'}).`)
}

/** A run an endpoint took: counted there until its first result, its origin that host, its checkpoint naming it for a restore. */
function began(pool: EndpointPool, endpoint: Endpoint, run: SubagentRun): SubagentRun {
  endpoint.markUp()
  pool.began(endpoint)
  run.origin = endpoint.host
  void run.result.then(() => endpoint.outstanding--)
  const checkpoint = run.checkpoint
  if (checkpoint) run.checkpoint = () => ({ ...checkpoint() as object, endpoint: endpoint.url.href })
  return run
}

/** Every endpoint's last error, in config order: what this start got from it, else what it got last. */
function lastErrors(pool: EndpointPool, tried: Map<Endpoint, string>): string {
  return pool.endpoints.map((endpoint, i) => {
    const why = tried.get(endpoint) ?? endpoint.lastError ?? 'not tried'
    const since = endpoint.healthy ? '' : `, unhealthy since ${new Date(endpoint.since).toISOString()}`
    return `${i + 1}. ${endpoint.url.href}: ${why}${since}`
  }).join('; ')
}
