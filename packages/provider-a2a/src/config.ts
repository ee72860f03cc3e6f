import { Schema } from 'cordis'
import { count, duration, NAME_PATTERN, unsetGroup } from '@cordis-subagents/shared'

/** Most endpoints one provider load spreads its tasks over. */
export const MAX_ENDPOINTS = 32

/** Plugin config. `url` or `urls` (exactly one) is required; the schema fills the other defaults. */
export interface Config {
  name?: string
  url?: string
  urls?: string[]
  bearerTokenEnv?: string
  bearerToken?: string
  headersFromEnv?: Record<string, string>
  allowHttp?: boolean
  allowCrossOrigin?: boolean
  cardTimeout?: number
  requestTimeout?: number
  idleTimeout?: number
  pollInterval?: number
  stuckTimeout?: number
  cancelGrace?: number
  parkedTimeout?: number
  cardRefreshInterval?: number
  retryDelay?: number
  maxResponseBytes?: number
  maxStreamBytes?: number
  maxOutputBytes?: number
  description?: string
  cardKey?: string | Record<string, unknown>
  cardJwksUrl?: string
}

export const Config: Schema<Config> = Schema.object({
  name: Schema.string().pattern(NAME_PATTERN).default('a2a')
    .description('Provider name the subagent tool refers to (`provider: a2a`). Load the plugin twice with different names for two remote agents.'),
  url: Schema.string()
    .description('The remote agent: its base URL (`http://127.0.0.1:41241`, the card is read from `/.well-known/agent-card.json`) or the full URL of its agent card (a path ending in `.json`). One URL, e.g. a load balancer. Give `url` or `urls`, not both.'),
  urls: unsetGroup(Schema.array(Schema.string()))
    .description(`Several hosts of the same agent (1-${MAX_ENDPOINTS} URLs, each like \`url\`): each task starts on the healthy one with the fewest tasks running, and a host that cannot be reached is failed over. Give \`url\` or \`urls\`, not both.`),
  bearerTokenEnv: Schema.string()
    .description('Name of an environment variable holding a bearer token: every request carries `Authorization: Bearer <value>`. The value is never logged nor put in a diagnostic.'),
  bearerToken: Schema.string().role('secret')
    .description('A bearer token given in config (e.g. `!!js "a2aServer.token"`, the token a serve-a2a plugin of this app generated): every request carries `Authorization: Bearer <value>`. Not with `bearerTokenEnv`. Never logged nor put in a diagnostic.'),
  headersFromEnv: Schema.dict(String).default({})
    .description('More request headers, each read from an environment variable: `{ X-Api-Key: REMOTE_API_KEY }`. Values are never logged nor put in a diagnostic.'),
  allowHttp: Schema.boolean().default(false)
    .description('Allow plain http:// to a host that is not loopback (127.0.0.0/8, ::1, localhost). Off: such a URL fails the load, because prompts, answers and tokens would cross the network unencrypted.'),
  allowCrossOrigin: Schema.boolean().default(false)
    .description('Follow an agent card whose interface URL is on another origin than the card. Off: such a card is refused, so a card cannot send our prompts and headers elsewhere.'),
  cardTimeout: duration({ min: 1 }).default(10_000)
    .description('Milliseconds to fetch the agent card at load (connect, headers and body).'),
  requestTimeout: duration({ min: 1 }).default(30_000)
    .description('Milliseconds for one request: the answer to a send, a poll or a cancel (headers and body), and a stream\'s headers and first event.'),
  idleTimeout: duration({ min: 1 }).default(300_000)
    .description('Milliseconds a streamed task may send no event (keep-alive comments do not count) before the run ends as an error. Polled tasks: the longest time without any poll answer.'),
  pollInterval: duration({ min: 50 }).default(1_000)
    .description('Milliseconds between `GetTask` polls when the card says the agent cannot stream.'),
  stuckTimeout: duration({ min: 1 }).default(600_000)
    .description('Milliseconds a polled task may answer with no change (same state, no new status, message or artifact) before the run ends as an error: its executor has likely failed without saying so.'),
  cancelGrace: duration().default(5_000)
    .description('Milliseconds the remote gets after `CancelTask` to report the task canceled before the run ends (as aborted) without it.'),
  parkedTimeout: duration().default(86_400_000)
    .description('Milliseconds a run whose remote task asks a question (input-required, auth-required) waits for the answer before the task is cancelled; 0: no limit. No other timer runs while a run waits.'),
  cardRefreshInterval: duration({ min: 10 }).default(60_000)
    .description('Milliseconds after which an endpoint\'s agent card is read again (in the background, when a task starts). A read that succeeds marks the endpoint healthy; one that fails marks it unhealthy.'),
  retryDelay: duration({ min: 10 }).default(1_000)
    .description('Milliseconds before an unhealthy endpoint\'s card is read again; doubles with each failure in a row, up to `cardRefreshInterval`.'),
  maxResponseBytes: count({ min: 1024 }).default(4 * 1024 * 1024)
    .description('Largest body of one answer (the card, a send, a poll) in bytes; more is an error naming this limit.'),
  maxStreamBytes: count({ min: 1024 }).default(64 * 1024 * 1024)
    .description('Most bytes one streamed task may send. A stream that sends more is stopped and the run ends as an error naming this limit.'),
  maxOutputBytes: count({ min: 1 }).default(1024 * 1024)
    .description('Largest output text kept (UTF-8 bytes); more is cut, and the diagnostic says so.'),
  description: Schema.string()
    .description('Appended to the tool description the model sees. Default: the agent card\'s name and description.'),
  cardKey: Schema.union([Schema.string(), Schema.dict(Schema.any())])
    .description('Check the agent card\'s signature (A2A 1.0 `AgentCardSignature`, JWS) with this public key: a JWK (object or JSON; `!!js "a2aServer.cardPublicJwk"` for a serve-a2a of this app) or a SPKI PEM. A card that is unsigned or does not verify is refused (A2A_CARD_UNVERIFIED). Without it and `cardJwksUrl`, cards are not checked.'),
  cardJwksUrl: Schema.string()
    .description('Check the agent card\'s signature with the key of the signature\'s `kid` in the JWKS at this URL (read with `cardTimeout` and `maxResponseBytes` each time a card is read; https, or http to loopback unless `allowHttp`). The card\'s own `jku` is never followed. Not with `cardKey`.'),
})
