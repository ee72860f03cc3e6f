import type { PendingQuestion } from '@cordis-subagents/shared'
import { capDiagnostic, type SubagentResult } from '@cordis-subagents/subagents-service'

/**
 * The bound of a child parked on a question: `maxParkedMs` after it parked without an answer,
 * `expire` runs once. The timer does not keep the process alive (a parked child makes no calls).
 */
export class ParkTimer {
  private timer?: NodeJS.Timeout

  constructor(private readonly maxParkedMs: number) {}

  arm(expire: () => void): void {
    this.clear()
    this.timer = setTimeout(() => {
      this.timer = undefined
      expire()
    }, this.maxParkedMs)
    this.timer.unref()
  }

  clear(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}

/** The result of a child whose question waited `maxParkedMs`: `timeout`, its output so far, the question named. */
export function expiredResult(
  latest: SubagentResult | undefined, question: PendingQuestion, maxParkedMs: number, provider: string,
): SubagentResult {
  const what = JSON.stringify(question.text.slice(0, 300))
  const diagnostic = capDiagnostic(`The child waited maxParkedMs (${maxParkedMs} ms) for an answer to its question ${what} and got none, `
    + 'so it was ended. Answer pending questions sooner (ctx.subagents.pending() lists them), '
    + `or raise maxParkedMs of the "${provider}" provider.`)
  return { ...latest ?? { output: '' }, stopReason: 'timeout', question: undefined, diagnostic }
}
