import type { AbortScope } from '@cordis-subagents/shared'
import type { Agent, InboxDelegation } from '@cordis-subagents/agent'

// The shapes of a background delegation (book.ts): what starts one, its states, where its result went.

/** What a parent's turn does when it would end while its background children run. */
export type TurnEndPolicy = 'wait' | 'end'

/** The message an ended task's result becomes when no wait collects it: its text, and the usage and work it carries. */
export interface BackgroundMessage extends InboxDelegation {
  text: string
}

/** A background delegation to record. */
export interface BackgroundStart {
  parent: Agent
  label: string
  provider: string
  /** `wait`: the parent's turn does not end before this result is delivered (an inbox hold). `end`: it may. */
  onTurnEnd: TurnEndPolicy
  /**
   * The abort of the turn that starts it (its signal, or its scope: a tool call's `exec.abortScope`, which makes no
   * `AbortSignal`): it cancels the delegation while that turn runs.
   */
  turnSignal: AbortSignal | AbortScope
}

/** Where a result went: exactly one of these, once. */
export type Delivery =
  | { via: 'wait' }
  | { via: 'message' }
  /** `unread`: its message was posted, but the parent was disposed before reading it. */
  | { via: 'lost'; reason: string; unread?: true }

export type BackgroundState = 'starting' | 'running' | 'ended'
