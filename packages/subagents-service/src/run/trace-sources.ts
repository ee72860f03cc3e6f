import type { Logger } from 'cordis'
import { checkedTraceContext } from '@cordis-subagents/shared'
import { describeError } from '@cordis-subagents/shared'
import type { ProviderStartRequest, TraceContextSource } from '../types.js'

/**
 * The sources of trace context for delegations (`ctx.subagents.traceDelegations`): a tracing plugin
 * gives each delegation the context of its own span, so a child elsewhere continues the trace.
 * With none registered, a start pays one field read.
 */
export class TraceSources {
  private readonly sources = new Set<TraceContextSource>()
  /** How many sources there are: a field, so a start without any reads it and never calls in here. */
  size = 0

  add(source: TraceContextSource): () => void {
    this.sources.add(source)
    this.size = this.sources.size
    return () => {
      this.sources.delete(source)
      this.size = this.sources.size
    }
  }

  /** Sets `request.traceContext` from the first source that gives a valid one (unless the caller set it). */
  apply(request: ProviderStartRequest, provider: string, log: Logger): void {
    if (!this.sources.size || request.traceContext) return
    for (const source of [...this.sources]) {
      let context: unknown
      try {
        context = source(request, provider)
      } catch (error) {
        log.warn('a trace context source failed (ignored): %s', describeError(error))
        continue
      }
      if (context === undefined) continue
      const checked = checkedTraceContext(context, 'the trace context source\'s result')
      if ('problem' in checked) {
        log.warn('ignoring a trace context: %s', checked.problem)
        continue
      }
      request.traceContext = checked.context
      return
    }
  }
}
