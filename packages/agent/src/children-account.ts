// The shape of a root run's account of its delegations (`RunResult.children`), filled in by the subagents service.

/** Where one delegation is: still working, parked on a question, or the stop reason it ended with. */
export type DelegationState =
  | 'running' | 'pending'
  | 'completed' | 'error' | 'aborted' | 'budget' | 'timeout' | 'max-steps' | 'max-tokens' | 'refusal' | 'invalid_output'

/** One delegation of the tree. */
export interface DelegationEntry {
  runId: string
  provider: string
  label?: string
  /** The delegating agent's id, and the child's (in-process children have one). */
  parentId: string
  childId?: string
  depth: number
  state: DelegationState
  /** Its result ended, was handed to its parent as a message, and the parent's model has not read it (or never will). */
  unread?: true
}

/** Every delegation of a root run's tree: counts of all of them, and the list, capped. */
export interface DelegationAccount {
  /**
   * Delegations counted: on a run's result (`RunResult.children`), those of its turn and those of earlier
   * turns still unfinished or unread when it began; from `ctx.subagents.account(root)`, every one since the root was created.
   */
  total: number
  /** How many are in each state. */
  states: Partial<Record<DelegationState, number>>
  /** Ended results the parent's model has not read (each is also an entry with `unread: true`, when listed). */
  unread: number
  /**
   * The entries, the unfinished and unread first, then by start; at most the service's cap (`MAX_ACCOUNT_LISTED`).
   * A tree keeps every unfinished entry and its latest ended ones up to that cap: older ended ones are only counted.
   */
  listed: DelegationEntry[]
  /** `total - listed.length`: counted, not listed. */
  omitted: number
}
