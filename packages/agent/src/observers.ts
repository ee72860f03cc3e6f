import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from './agent.js'
import type { TurnWatch } from './turn-owner.js'
import type { GenerateResponse, ModelToolCall, RunResult } from './types.js'

/**
 * Watches every agent run of a runtime: the run, its model calls and its tool calls, as they
 * start and end (a tracing or metrics plugin). Every method is optional and called synchronously
 * on the agent's loop: keep it cheap, never block. A method that throws is ignored.
 * Arguments are positional so a call builds no event object.
 */
export interface AgentObserver {
  /**
   * A run began (after the prompt was checked, before the first model call). Returning exactly
   * `false` declines the run (any other value, or none, watches it): this observer gets no other
   * call for it, and a run nobody watches pays nothing per step (a tracer with no SDK behind it
   * declines every run it would not record).
   */
  runStart?(agent: Agent, prompt: string, resumed?: string): unknown
  /**
   * The run ended (every model and tool call of it ended before). A turn that parks on a question
   * ends its run here with `stopReason: 'pending'`; `agent.resume(answer)` starts a new run of the
   * same turn: `runStart(agent, answer, questionId)`, and its result's tallies cover the whole turn.
   */
  runEnd?(agent: Agent, result: RunResult): void
  /** A model call began: `model` is the agent's model ref (`name` or `name:modelId`), when it names one. */
  modelCallStart?(agent: Agent, step: number, model: string | undefined): void
  /** The model call ended: with its normalised response, or with `error` when it threw or the turn was aborted (`aborted`). */
  modelCallEnd?(agent: Agent, step: number, response: GenerateResponse | undefined, error?: unknown, aborted?: boolean): void
  /** A tool call of the model's response began (refused and malformed calls too: they end at once with an error result). */
  toolCallStart?(agent: Agent, step: number, call: ModelToolCall): void
  /** The tool call ended with the result the model reads (a cancelled call ends with the cancel result). */
  toolCallEnd?(agent: Agent, step: number, call: ModelToolCall, result: ToolResult): void
}

/** The observers of one run, fixed when it began: an observer added mid-run sees the next run. */
export class RunWatch implements TurnWatch {
  constructor(private readonly agent: Agent, private readonly observers: readonly AgentObserver[]) {}

  // Each method calls every observer in its own try: an observer must never break the loop
  // (no closure per call: these run for every model and tool call of an observed run).

  modelStart(step: number, model: string | undefined): void {
    for (const observer of this.observers) {
      try { observer.modelCallStart?.(this.agent, step, model) } catch { /* ignored */ }
    }
  }

  modelEnd(step: number, response: GenerateResponse | undefined, error?: unknown, aborted = false): void {
    for (const observer of this.observers) {
      try { observer.modelCallEnd?.(this.agent, step, response, error, aborted) } catch { /* ignored */ }
    }
  }

  toolStart(step: number, call: ModelToolCall): void {
    for (const observer of this.observers) {
      try { observer.toolCallStart?.(this.agent, step, call) } catch { /* ignored */ }
    }
  }

  toolEnd(step: number, call: ModelToolCall, result: ToolResult): void {
    for (const observer of this.observers) {
      try { observer.toolCallEnd?.(this.agent, step, call, result) } catch { /* ignored */ }
    }
  }

  end(result: RunResult): void {
    for (const observer of this.observers) {
      try { observer.runEnd?.(this.agent, result) } catch { /* ignored */ }
    }
  }
}

/** The observers of a runtime. With none, `watch` returns undefined after one size check. */
export class Observers {
  private readonly set = new Set<AgentObserver>()
  /** A copy taken when the set changes, so a run's start copies nothing. */
  private list: readonly AgentObserver[] = []
  /** How many observers there are: a field, so a run's check is a read. */
  size = 0

  add(observer: AgentObserver): () => void {
    this.set.add(observer)
    this.changed()
    return () => {
      this.set.delete(observer)
      this.changed()
    }
  }

  private changed(): void {
    this.list = [...this.set]
    this.size = this.list.length
  }

  /**
   * Tells the observers that `agent` begins a run; the watch reports the rest of it to those that
   * did not decline it. Undefined when nobody watches the run.
   */
  watch(agent: Agent, prompt: string, resumed?: string): RunWatch | undefined {
    if (!this.list.length) return undefined
    const observers = this.list
    // Built only once an observer declines; until then the shared list serves as is.
    let watching: AgentObserver[] | undefined
    for (let i = 0; i < observers.length; i++) {
      const observer = observers[i]
      let declined = false
      try {
        declined = (resumed === undefined ? observer.runStart?.(agent, prompt) : observer.runStart?.(agent, prompt, resumed)) === false
      } catch { /* ignored: an observer must never break the loop */ }
      if (declined) watching ??= observers.slice(0, i)
      else watching?.push(observer)
    }
    const list = watching ?? observers
    return list.length ? new RunWatch(agent, list) : undefined
  }
}
