import { describeError } from '@cordis-subagents/shared'
import type { AgentSlot } from './agent-slot.js'
import { AcpError } from './errors.js'
import type { Handshake } from './handshake.js'
import type { RunSettings } from './settings.js'

/** How the run's session was opened: a new one, the earlier one continued, or a fork of it. */
export type Opened = 'new' | 'resumed' | 'forked'

/**
 * Opens the run's session. With a session to resume: a fork child forks it (session/fork) when the
 * agent offers that, any other run continues it (session/resume, else session/load) when the agent
 * can; else (or when that fails on a healthy process) session/new.
 */
export async function openSession(link: Handshake, slot: AgentSlot, settings: RunSettings, signal: AbortSignal): Promise<Opened> {
  const resume = settings.resumeSessionId
  if (resume && settings.restore && !link.canContinue) {
    throw new AcpError('ACP_RESTORE_FAILED', `The ACP agent "${settings.command}" does not load sessions (no loadSession or session resume capability), `
      + `so session ${resume} cannot be continued after a restart; delegate the task again.`)
  }
  const { fork } = settings
  const how = resume && fork && link.canForkSession ? 'forked' : resume && link.canContinue ? 'resumed' : undefined
  if (resume && how) {
    try {
      await (how === 'forked' ? link.forkSession(signal, settings, resume) : link.resumeSession(signal, settings, resume))
      if (fork) fork.held = fork.kept
      return how
    } catch (error) {
      if (signal.aborted || !slot.healthy) throw error
      if (settings.restore) {
        throw new AcpError('ACP_RESTORE_FAILED', `The ACP agent "${settings.command}" could not load session ${resume} `
          + `(${describeError(error)}); it cannot be continued after the restart. Delegate the task again.`, { cause: error })
      }
      settings.logger.debug('%s: could not %s session %s (%s); opening a new one', settings.providerName, how === 'forked' ? 'fork' : 'continue',
        resume, describeError(error))
    }
  }
  // A spare's session opened ahead with these settings is this run's (no round trip). When only the
  // per-run part of `_meta` differs (budget, trace), the run's `_meta` goes with its prompts instead.
  const ahead = link.takeAhead(settings)
  if (ahead === 'adopted' && settings.sessionMeta) settings.promptMeta = { ...settings.sessionMeta, ...settings.promptMeta }
  if (ahead) return 'new'
  await link.startSession(signal, settings)
  return 'new'
}

/** The status a run that asked to continue a session reports once its session is open. */
export function openedStatus(opened: Opened): string {
  return opened === 'new' ? 'new session (the earlier one could not be continued)' : `${opened} session`
}

/** The run's first prompt: a fork child's leads with the parent's turns its session does not hold yet. */
export function firstPrompt(settings: RunSettings, prompt: string): string {
  return settings.fork ? settings.fork.firstPrompt(prompt) : prompt
}
