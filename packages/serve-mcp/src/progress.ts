import type { ToolUpdate } from '@cordis-subagents/tools'
import { headChars, peerLine } from '@cordis-subagents/shared'

/** Longest progress message sent to the client (characters). */
const MAX_PROGRESS_CHARS = 1024

/**
 * The one line a client reads in `notifications/progress` for a served tool's update: the child's
 * own text when it has one, else what the child's update says (`step 3`, `tool-call read_file`,
 * `usage: 1200 tokens`), else the update's kind. Cleaned (one line, no control characters) and capped
 * (never half a character).
 */
export function progressLine(update: ToolUpdate): string {
  const data = (update.data && typeof update.data === 'object' ? update.data : {}) as Record<string, unknown>
  const text = typeof update.text === 'string' && update.text.trim() ? update.text : described(data)
  const line = peerLine(headChars(text ?? update.kind, MAX_PROGRESS_CHARS * 2)).trim()
  return headChars(line || update.kind, MAX_PROGRESS_CHARS)
}

/** A child's update without text (a delegation's `SubagentUpdate`), in words. */
function described(data: Record<string, unknown>): string | undefined {
  if (typeof data.text === 'string' && data.text.trim()) return data.text
  const kind = typeof data.kind === 'string' ? headChars(data.kind, 32) : undefined
  if (!kind) return undefined
  const tool = typeof data.tool === 'string' ? ` ${headChars(data.tool, 128)}` : ''
  switch (kind) {
    case 'step':
      return typeof data.step === 'number' ? `step ${data.step}` : 'step'
    case 'tool-call':
      return `tool-call${tool}`
    case 'tool-result':
      return `tool-result${tool}${data.isError === true ? ' (error)' : ''}`
    case 'usage': {
      const usage = (data.usage && typeof data.usage === 'object' ? data.usage : {}) as Record<string, unknown>
      const tokens = Number(usage.inputTokens ?? 0) + Number(usage.outputTokens ?? 0)
      return Number.isFinite(tokens) && tokens > 0 ? `usage: ${tokens} tokens` : 'usage'
    }
    default:
      return kind
  }
}
