import { ROOT_CONTEXT, type Span, SpanKind, trace, type Tracer } from '@opentelemetry/api'
import type { Agent } from '@cordis-subagents/agent'
import type {
  ProviderStartRequest, SubagentOutcome, SubagentRunInfo, TraceContext,
} from '@cordis-subagents/subagents-service'
import { OURS, GEN_AI } from './attributes.js'
import { headersOf } from './carrier.js'
import { bounded, type ContentPolicy } from './content.js'
import { fail, type RunParent, type RunSpans } from './runs.js'

interface Delegation {
  span: Span
  /** The child's parent: this span. */
  child: RunParent
  handedOver: boolean
}

/**
 * One span per delegation (`ctx.subagents`), under the parent's `execute_tool` span: it begins
 * right before the provider starts the child (its context is what the child continues, in this
 * process or over ACP) and ends with the run's outcome (`subagent/end`).
 */
export class DelegationSpans {
  private readonly open = new Map<string, Delegation>()
  /** In-process children find their delegation by the budget the service carved for them. */
  private readonly byBudget = new WeakMap<object, RunParent>()

  constructor(
    private readonly tracer: Tracer, private readonly runs: RunSpans, private readonly content: ContentPolicy,
    private readonly recording: () => boolean,
  ) {}

  /** The trace context source for `ctx.subagents.traceDelegations`. */
  readonly source = (request: Readonly<ProviderStartRequest>, provider: string): TraceContext | undefined => {
    const parent = request.parent as Agent
    const at = this.runs.toolContext(parent, request.toolCallId)
    // No SDK and no traced run to continue: the span would record nothing and carry no context.
    if (!at && !this.recording()) return undefined
    const name = bounded(provider)
    const runId = bounded(request.runId)
    const span = this.tracer.startSpan(`subagent ${name}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [OURS.runId]: runId,
        [OURS.provider]: name,
        [OURS.depth]: request.depth,
        [OURS.parentId]: bounded(parent.id),
        ...request.label === undefined ? {} : { [OURS.label]: bounded(request.label) },
        ...request.toolCallId === undefined ? {} : { [GEN_AI.toolCallId]: bounded(request.toolCallId) },
      },
    }, at?.context ?? ROOT_CONTEXT)
    const child: RunParent = {
      context: trace.setSpan(at?.context ?? ROOT_CONTEXT, span),
      attributes: { [OURS.runId]: runId, [OURS.provider]: name },
    }
    this.open.set(request.runId, { span, child, handedOver: false })
    if (request.budget) this.byBudget.set(request.budget, child)
    return headersOf(span.spanContext())
  }

  /** The delegation an in-process child belongs to (by the budget it runs on). */
  parentOf(agent: Agent): RunParent | undefined {
    return this.byBudget.get(agent.budget)
  }

  started(info: SubagentRunInfo): void {
    const delegation = this.open.get(info.runId)
    if (!delegation) return
    delegation.handedOver = true
    if (info.childId !== undefined) delegation.span.setAttribute(OURS.childId, bounded(info.childId))
    if (info.origin !== undefined) delegation.span.setAttribute(OURS.origin, bounded(info.origin))
  }

  ended(info: SubagentRunInfo, outcome: SubagentOutcome): void {
    const delegation = this.open.get(info.runId)
    if (!delegation) return
    this.open.delete(info.runId)
    const { span } = delegation
    span.setAttributes({
      [OURS.stopReason]: outcome.stopReason,
      [OURS.durationMs]: outcome.durationMs,
      [OURS.steps]: outcome.work.steps,
      [OURS.toolCalls]: outcome.work.toolCalls,
      [OURS.delegations]: outcome.work.delegations,
      ...outcome.usage ? { [OURS.treeInputTokens]: outcome.usage.inputTokens, [OURS.treeOutputTokens]: outcome.usage.outputTokens } : {},
    })
    if (outcome.budget) {
      const { budget } = outcome
      span.setAttributes({ [OURS.budgetName]: budget.budget, [OURS.budgetLimit]: budget.limit, [OURS.budgetSpent]: budget.spent })
    }
    if (outcome.stopReason !== 'completed') {
      // A child's diagnostic carries its model's and tools' text (an ACP agent's stderr): content.
      const fixed = `The child ended with ${outcome.stopReason}.`
      fail(span, outcome.stopReason, this.content.capture ? outcome.diagnostic ?? fixed : fixed)
    }
    span.end()
  }

  /** The service reports the start never became a run (`subagent/start-failed`): the span ends failed. */
  failedToStart(runId: string, error: { code?: string; message?: string }): void {
    const delegation = this.open.get(runId)
    if (!delegation || delegation.handedOver) return
    this.open.delete(runId)
    const code = bounded(String(error.code ?? 'unknown'))
    delegation.span.setAttribute(OURS.errorCode, code)
    const why = this.content.capture && error.message !== undefined ? error.message : `its start failed (${code})`
    fail(delegation.span, 'start_failed', `The child was never handed over: ${why}`)
    delegation.span.end()
  }

  /** Ends every span still open (the plugin is being disposed). */
  closeAll(): void {
    for (const { span } of this.open.values()) {
      fail(span, 'incomplete', 'The delegation\'s end was not seen: telemetry was unloaded.')
      span.end()
    }
    this.open.clear()
  }
}
