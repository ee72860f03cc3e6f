import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from './agent.js'
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
