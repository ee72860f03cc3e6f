import { describeError } from '@cordis-subagents/shared'
import type { AgentSlot } from './agent-slot.js'
import { AcpError } from './errors.js'
import type { Handshake } from './handshake.js'
import type { RunSettings } from './settings.js'

/**
 * Opens the run's session: session/resume (else session/load) of the session to resume when the
 * agent can continue sessions, else (or when that fails on a healthy process) session/new. True when it resumed.
 */
export async function openSession(link: Handshake, slot: AgentSlot, settings: RunSettings, signal: AbortSignal): Promise<boolean> {
  const resume = settings.resumeSessionId
  if (resume && settings.restore && !link.canContinue) {
    throw new AcpError('ACP_RESTORE_FAILED', `The ACP agent "${settings.command}" does not load sessions (no loadSession or session resume capability), `
      + `so session ${resume} cannot be continued after a restart; delegate the task again.`)
  }
  if (resume && link.canContinue) {
    try {
      await link.resumeSession(signal, settings, resume)
      return true
    } catch (error) {
      if (signal.aborted || !slot.healthy) throw error
      if (settings.restore) {
        throw new AcpError('ACP_RESTORE_FAILED', `The ACP agent "${settings.command}" could not load session ${resume} `
          + `(${describeError(error)}); it cannot be continued after the restart. Delegate the task again.`, { cause: error })
      }
      settings.logger.debug('%s: could not continue session %s (%s); opening a new one', settings.providerName, resume, describeError(error))
    }
  }
  // A spare's session opened ahead with these settings is this run's (no round trip). When only the
  // per-run part of `_meta` differs (budget, trace), the run's `_meta` goes with its prompts instead.
  const ahead = link.takeAhead(settings)
  if (ahead === 'adopted' && settings.sessionMeta) settings.promptMeta = { ...settings.sessionMeta, ...settings.promptMeta }
  if (ahead) return false
  await link.startSession(signal, settings)
  return false
}
