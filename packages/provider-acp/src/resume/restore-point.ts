import { isAbsolute } from 'node:path'
import type * as Acp from '@agentclientprotocol/sdk'
import { checkedQuestion, type PendingQuestion } from '@cordis-subagents/shared'
import type { RunRecord } from '@cordis-subagents/subagents-service'

/**
 * What a run's `checkpoint()` keeps (JSON), and what `restore` continues from after a restart:
 * the ACP session (reloaded with session/load) and, while parked, its question. A permission
 * request does not survive its process: after a restore the answer goes to the session as a prompt.
 */
export interface AcpCheckpoint {
  sessionId: string
  cwd: string
  question?: PendingQuestion
  /** With a permission question: the options the agent offered (for reading the answer after a restore). */
  options?: Acp.PermissionOption[]
}

const MAX_ID = 256
const MAX_OPTIONS = 64

/** The checkpoint in a journal's record, checked (it comes from storage); a sentence saying what is wrong otherwise. */
export function restorePoint(record: RunRecord): AcpCheckpoint | string {
  const saved = record.checkpoint as Partial<AcpCheckpoint> | undefined
  if (!saved || typeof saved !== 'object') return `run ${record.runId} has no ACP checkpoint (its agent could not load sessions)`
  const { sessionId, cwd } = saved
  if (typeof sessionId !== 'string' || !sessionId || sessionId.length > MAX_ID) return `run ${record.runId}'s checkpoint has no valid session id`
  if (typeof cwd !== 'string' || !isAbsolute(cwd)) return `run ${record.runId}'s checkpoint has no absolute cwd`
  const point: AcpCheckpoint = { sessionId, cwd }
  if (record.state !== 'parked') return point
  const question = checkedQuestion(record.question ?? saved.question)
  if (typeof question === 'string') return `run ${record.runId} was parked, but its question is unusable: ${question}`
  point.question = question
  if (Array.isArray(saved.options)) point.options = saved.options.slice(0, MAX_OPTIONS).filter(isOption)
  return point
}

function isOption(value: unknown): value is Acp.PermissionOption {
  const option = value as Partial<Acp.PermissionOption> | null
  return !!option && typeof option.optionId === 'string' && typeof option.kind === 'string'
    && (option.name === undefined || typeof option.name === 'string')
}

/**
 * The prompt that carries a permission answer to a restored session: the request itself was lost
 * with the agent's process, so the agent is told what it asked and what the answer is.
 */
export function permissionAnswerPrompt(question: PendingQuestion, chosen: Acp.PermissionOption | 'cancelled'): string {
  const asked = question.text.split('\n')[0]!.replace(/^The agent asks permission for a tool call: /, '')
  const allowed = chosen !== 'cancelled' && chosen.kind.startsWith('allow')
  const answer = chosen === 'cancelled' ? 'no' : `"${chosen.name || chosen.optionId}" (${chosen.kind})`
  return `Before your process was restarted you asked permission for a tool call (${asked}); that request could not be kept open. `
    + `The answer is ${answer}: ${allowed ? 'make that tool call again now, and continue the task.' : 'do not make that call; continue the task without it.'}`
}
