import { headChars } from '@cordis-subagents/shared'
import type { SubagentRunState } from '../types.js'

// What holds the slots a start waits for, as a refusal or a timeout names it (bounded).

/** A run that holds a slot (the service's `Delegation`): its id, where it is, and its label once handed over. */
export interface SlotHolder {
  readonly id: string
  readonly state: SubagentRunState
  readonly info?: { readonly label?: string }
}

/** Runs named per state in a description; the rest are counted. */
const NAMED_PER_STATE = 5
const LABEL_CHARS = 60

const STATE_WORDS: Record<SubagentRunState, string> = {
  running: 'running',
  parked: 'parked on a question',
  interrupted: 'interrupted (idle)',
  ended: 'ended, not yet disposed',
}

/** Whether a holder waits on someone else (an answer, a wake) rather than working its way to the end. */
export function isIdleHolder(holder: SlotHolder): boolean {
  return holder.state === 'parked' || holder.state === 'interrupted'
}

/** `2 running (run-1 "fix the tests", run-2), 6 parked on a question (run-3, …)`: at most 5 runs named per state. */
export function describeHolders(holders: Iterable<SlotHolder>): string {
  const byState = new Map<SubagentRunState, SlotHolder[]>()
  for (const holder of holders) {
    const list = byState.get(holder.state)
    if (list) list.push(holder)
    else byState.set(holder.state, [holder])
  }
  if (!byState.size) return 'none of them by a run of this host (they are being handed on)'
  const parts: string[] = []
  for (const state of ['running', 'parked', 'interrupted', 'ended'] as const) {
    const list = byState.get(state)
    if (!list) continue
    const named = list.slice(0, NAMED_PER_STATE).map(name)
    const more = list.length - named.length
    parts.push(`${list.length} ${STATE_WORDS[state]} (${named.join(', ')}${more ? `, and ${more} more` : ''})`)
  }
  return parts.join(', ')
}

function name(holder: SlotHolder): string {
  const label = holder.info?.label
  return label ? `${holder.id} ${JSON.stringify(headChars(label, LABEL_CHARS))}` : holder.id
}
