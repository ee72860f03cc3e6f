import type * as Acp from '@agentclientprotocol/sdk'
import { agentText } from './sdk.js'

/**
 * An option that ends the turn rather than refusing one action: Codex' adapter, for one, offers
 * its only reject-kind option as "abort". Recognised by id or name.
 */
const ABORT_LIKE = /abort|cancel|stop|halt|terminate|interrupt|end[ _-]?turn/i

function isAbortLike(option: Acp.PermissionOption): boolean {
  return ABORT_LIKE.test(option.optionId) || ABORT_LIKE.test(option.name ?? '')
}

/**
 * The least destructive "no" on offer: `reject_once` over `reject_always` (which an adapter
 * may persist), and either over an abort-like option (which ends the whole turn). Undefined
 * when the agent offers no reject option at all.
 */
export function chooseReject(options: readonly Acp.PermissionOption[]): Acp.PermissionOption | undefined {
  const rank = (option: Acp.PermissionOption) => {
    const kind = option.kind === 'reject_once' ? 0 : option.kind === 'reject_always' ? 1 : -1
    if (kind < 0) return -1
    return (isAbortLike(option) ? 2 : 0) + kind
  }
  let best: Acp.PermissionOption | undefined
  let bestRank = Infinity
  for (const option of options) {
    const r = rank(option)
    if (r >= 0 && r < bestRank) {
      best = option
      bestRank = r
    }
  }
  return best
}

/** `allow_once` only: `allow_always` may be persisted by the adapter (e.g. into project settings). */
function chooseAllow(options: readonly Acp.PermissionOption[]): Acp.PermissionOption | undefined {
  return options.find((option) => option.kind === 'allow_once')
}

/** Most denials a diagnostic lists; an agent asking a thousand times gets the first ones named. */
const MAX_DENIALS = 20

export interface PermissionHooks {
  /** True once the turn is over or being cancelled: every request is answered `cancelled`. */
  closed(): boolean
  /** Progress note for the holder ("permission granted: …"). */
  status(text: string): void
  /** Debug log line for an allowed request. */
  granted(title: string, optionId: string): void
  /**
   * `permission: escalate`: parks the run on the request; resolves with the holder's answer
   * (or `cancelled` when the run ends first). Undefined when too many requests wait already.
   */
  escalate?(params: Acp.RequestPermissionRequest, title: string): Promise<Acp.RequestPermissionResponse> | undefined
}

/** How the provider answers permission requests (config `permission`). */
export type PermissionMode = 'reject' | 'allow' | 'escalate'

/**
 * Answers an agent's permission requests by the provider's `permission` setting (`escalate` asks
 * the run's holder, see escalation.ts) and remembers the denials for the diagnostic.
 */
export class PermissionDesk {
  readonly denials: string[] = []

  constructor(readonly mode: PermissionMode, private readonly hooks: PermissionHooks) {}

  answer(params: Acp.RequestPermissionRequest): Acp.RequestPermissionResponse | Promise<Acp.RequestPermissionResponse> {
    const title = agentText(String(params.toolCall?.title || params.toolCall?.toolCallId || 'a tool call'), 200)
    // After session/cancel the protocol wants every pending permission answered `cancelled`.
    if (this.hooks.closed()) return { outcome: { outcome: 'cancelled' } }
    const options = Array.isArray(params.options) ? params.options : []
    let note = ''
    if (this.mode === 'escalate') {
      const answered = this.hooks.escalate?.(params, title)
      if (answered) return answered
      note = '; too many permission requests were waiting for an answer at once'
    }
    if (this.mode === 'allow') {
      const allow = chooseAllow(options)
      if (allow) {
        this.hooks.granted(title, agentText(allow.optionId, 100))
        this.hooks.status(`permission granted: ${title}`)
        return { outcome: { outcome: 'selected', optionId: allow.optionId } }
      }
      note = '; no allow-once option was offered'
    }
    const reject = chooseReject(options)
    this.hooks.status(`permission denied: ${title}`)
    if (this.denials.length < MAX_DENIALS) {
      if (reject) {
        const abort = isAbortLike(reject) ? ', the only reject option offered, which ends the turn' : ''
        this.denials.push(`"${title}" (answered "${agentText(reject.name || reject.optionId, 100)}"${abort}${note})`)
      } else {
        this.denials.push(`"${title}" (no reject option was offered, answered cancelled${note})`)
      }
    }
    return reject ? { outcome: { outcome: 'selected', optionId: reject.optionId } } : { outcome: { outcome: 'cancelled' } }
  }
}
