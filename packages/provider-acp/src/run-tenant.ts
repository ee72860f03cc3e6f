import type { SlotTenant } from './agent-slot.js'
import type { PermissionDesk } from './permission.js'
import type { RunQuestions } from './questions/run-questions.js'
import type { RunSettings } from './settings.js'

/** What a run's tenant reads from the run, live (its session opens after the tenant is set). */
export interface TenantRun {
  /** The run's session id; undefined until the session is open. */
  sessionId(): string | undefined
  /** The run's result settled (a later `tell_parent` message is not delivered). */
  settled(): boolean
  /** The stream passed maxStreamBytes. */
  overflow(): void
}

/**
 * The slot's tenant for one run: the agent's requests reach the run only for the run's own session (a late
 * request of an earlier session on a reused process is not this run's to answer: a permission is cancelled).
 */
export function runTenant(run: TenantRun, permissions: PermissionDesk, questions: RunQuestions, settings: RunSettings): SlotTenant {
  return {
    answerPermission: (p) => p.sessionId === run.sessionId() ? permissions.answer(p) : { outcome: { outcome: 'cancelled' } },
    answerElicitation: (params) => questions.elicit(params, run.sessionId(), settings.permission === 'escalate'),
    tell: (id, message) => (id === run.sessionId() && !run.settled() ? settings.told : undefined)?.deliver(message),
    overflow: () => run.overflow(),
  }
}
