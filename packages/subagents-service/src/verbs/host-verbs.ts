import { headChars } from '@cordis-subagents/shared'
import type { Delegation } from '../run/delegation.js'
import { SubagentError } from '../errors.js'
import type { ParkedRunInfo, RunJournal } from '../run/journal-port.js'
import type { SubagentOutcome } from '../types.js'

// The host's verbs on one run of this service, by run id: resume, interrupt, wake, close, and the list of parked runs.

export class HostVerbs {
  constructor(private readonly live: Map<string, Delegation>, private readonly journal: () => RunJournal) {}

  /** The live run `runId`; `INVALID_REQUEST` for a malformed id, `NOT_FOUND` when no such run is live. */
  find(runId: string): Delegation {
    if (typeof runId !== 'string' || !runId) throw new SubagentError('INVALID_REQUEST', 'A run id is a non-empty string (as `run.id` or `info.runId` gave it).')
    const run = this.live.get(runId)
    if (!run) throw notFound(runId)
    return run
  }

  async resume(runId: string, answer: string): Promise<SubagentOutcome> {
    if (typeof runId === 'string' && !this.live.has(runId)) {
      const reopened = await this.journal().reopen?.(runId, answer)
      if (reopened) return reopened
    }
    return this.find(runId).resume(answer)
  }

  /** One verb of the live run `runId`; a refusal rejects. */
  async act(runId: string, verb: 'interrupt' | 'wake' | 'close'): Promise<SubagentOutcome> {
    return this.find(runId).verbs[verb]()
  }

  pending(): ParkedRunInfo[] {
    const parked: ParkedRunInfo[] = []
    for (const run of this.live.values()) {
      const { question } = run
      if (question && run.state === 'parked') parked.push({ runId: run.id, parentId: run.info.parentId, question })
    }
    for (const run of this.journal().pending?.() ?? []) if (!this.live.has(run.runId)) parked.push(run)
    return parked
  }
}

function notFound(runId: string): SubagentError {
  return new SubagentError('NOT_FOUND', `No run ${JSON.stringify(headChars(runId, 100))} is live on this host `
    + '(it ended and was disposed, or never existed); see ctx.subagents.runs().')
}
