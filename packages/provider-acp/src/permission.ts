import type * as Acp from '@agentclientprotocol/sdk'

/**
 * An option that ends the turn rather than refusing one action: Codex' adapter, for one, offers
 * its only reject-kind option as "abort". Recognised by id or name.
 */
const ABORT_LIKE = /abort|cancel|stop|halt|terminate|interrupt|end[ _-]?turn/i

export function isAbortLike(option: Acp.PermissionOption): boolean {
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
export function chooseAllow(options: readonly Acp.PermissionOption[]): Acp.PermissionOption | undefined {
  return options.find((option) => option.kind === 'allow_once')
}
