import { addWork } from '@cordis-subagents/shared'
import type { AgentEvent, RunResult } from '@cordis-subagents/agent'
import type { SubagentResult, SubagentUpdate } from '@cordis-subagents/subagents-service'

/** A child agent's turn(s), as the provider's result. */
export function toSubagentResult(run: RunResult, provider: string): SubagentResult {
  const work = addWork(run.work.own, run.work.delegated)
  // Built by assignment: V8 runs `{ ...base, stopReason }` on a slow path (≈ 0.7 µs per child).
  const result: SubagentResult = { stopReason: run.stopReason, output: run.text, usage: run.usage, work }
  if (run.stopReason === 'max-steps') {
    // The turn ends at its limit, so its own model calls are the limit.
    result.stepLimit = run.steps
    result.diagnostic = `The child hit its step limit (${run.steps} steps) without a final answer. `
      + `Give it a narrower task, or raise \`maxSteps\` of the "${provider}" provider.`
    return result
  }
  if (run.diagnostic) result.diagnostic = run.diagnostic
  if (run.budget) result.budget = run.budget
  if (run.stopReason === 'pending' && run.question) result.question = run.question
  return result
}

/** The child's agent events as the service's progress updates. */
export function forward(event: AgentEvent, send: (update: SubagentUpdate) => void) {
  let update: SubagentUpdate | undefined
  switch (event.type) {
    case 'step-start': update = { kind: 'step', step: event.step }; break
    case 'text': update = { kind: 'text', text: event.text, step: event.step }; break
    case 'tool-call': update = { kind: 'tool-call', tool: event.call.name, step: event.step }; break
    case 'tool-result': update = { kind: 'tool-result', tool: event.name, isError: !!event.result.isError, step: event.step }; break
  }
  if (update) send(update)
}
