import type { AbortScope } from '@cordis-subagents/shared'
import type { z } from 'zod'
import type { PendingQuestion, Usage, WorkCounts } from '@cordis-subagents/shared'

/**
 * Who is calling a tool. When an agent from `@cordis-subagents/agent` runs the tool, this is
 * that `Agent` (the registry sits below the agent package, so it only names what it needs).
 */
export interface ToolCaller {
  readonly id: string
  readonly depth: number
}

/** Progress a running tool reports to whoever drives the call (e.g. a child agent's steps). */
export interface ToolUpdate {
  kind: string
  text?: string
  data?: unknown
}

export interface ToolExecContext {
  signal: AbortSignal
  /**
   * The same abort as `signal`, as an `AbortScope` (`aborted`, `reason`, `onAbort(callback)`): set by the agent runtime,
   * whose `signal` is made only when first read (on Node 20 an `AbortSignal` costs ≈ 3 µs and outlives the next young
   * collection). A tool that only waits for the abort waits here when it is set (`onAbort` from `@cordis-subagents/shared`
   * takes either).
   */
  abortScope?: AbortScope
  agent: ToolCaller
  toolCallId: string
  onUpdate?: (update: ToolUpdate) => void
}

/** An image a tool returns beside its text: base64 `data` of a `mimeType` such as `image/png`. */
export interface ToolImage {
  mimeType: string
  data: string
}

export interface ToolResult {
  content: string
  isError?: boolean
  /**
   * Images beside `content`, for models that accept images (model-openai with `images: true`); a model
   * that does not reads only `content`, which should say what the images are. The tool bounds them.
   */
  images?: readonly ToolImage[]
  metadata?: Record<string, unknown>
  /**
   * A typed value the result carries beside its text (JSON-serialisable; `content` is its JSON text):
   * a delegation with an `output` schema sets the child's validated answer here.
   */
  structured?: unknown
  /** Tokens spent on the caller's behalf (e.g. by a child agent); rolled up as delegated usage. */
  usage?: Usage
  /**
   * Set by a delegation: the child tree's work (its model calls, tool calls and the delegations
   * below it). The caller counts the delegation itself and rolls this up as delegated work.
   */
  work?: WorkCounts
  /**
   * Set by a tool that cannot finish until someone answers a question (an ask tool, a delegation
   * whose child asked). The calling agent parks its turn (`stopReason: 'pending'`) instead of
   * answering the call; `content` is ignored. The tool must have `resume`.
   */
  suspend?: ToolSuspension
}

/** A suspended tool call: what it asks, and what its `resume` needs to go on (see `Tool.resume`). */
export interface ToolSuspension {
  question: PendingQuestion
  /** JSON-serialisable state for `resume` (e.g. a child's run id), at most 4 KiB as JSON: it is checkpointed. */
  state?: unknown
}

export type ToolInputSchema = z.ZodObject

export interface Tool<S extends ToolInputSchema = ToolInputSchema> {
  name: string
  description: string
  input: S
  /**
   * The model-facing JSON Schema (an object schema), for a tool whose schema comes from elsewhere (an
   * MCP server). When given, models see it instead of the one derived from `input`; `input` still
   * validates every call, so keep the two consistent (or make `input` the looser of the two).
   */
  parameters?: Record<string, unknown>
  /**
   * The deepest agent that sees this tool (a child is one deeper than its parent; a root agent is
   * at depth 0, unless a parent elsewhere started its host, e.g. over ACP). An agent deeper than
   * this neither lists it nor can call it: the call is answered exactly like an unknown tool.
   * Omitted: agents at every depth see it. A delegation tool that children must not use sets 0.
   */
  maxCallerDepth?: number
  execute(input: z.output<S>, exec: ToolExecContext): ToolResult | Promise<ToolResult>
  /**
   * Continues a call this tool suspended, with the answer to its question. Its result answers the
   * call; it may suspend again (a child that asks a second question). Called with a fresh `exec`
   * (same `toolCallId`), possibly after a host restart, so it may rely only on `suspension.state`.
   */
  resume?(answer: string, suspension: ToolSuspension, exec: ToolExecContext): ToolResult | Promise<ToolResult>
  /**
   * Optional: continues a call this tool suspended whose question was withdrawn (whoever asked it
   * no longer waits for an answer, e.g. a child that asked it ended): gives the call's result
   * without an answer (a delegation: its child's outcome). Called with a fresh `exec`, like `resume`;
   * it may suspend again. Without it the call gets an error result saying the question was withdrawn.
   */
  withdrawn?(suspension: ToolSuspension, exec: ToolExecContext): ToolResult | Promise<ToolResult>
}

/** What a model sees of a tool. `parameters` is a JSON Schema object. */
export interface ToolSpec {
  name: string
  description: string
  parameters: Record<string, unknown>
}

export interface ToolCall {
  id?: string
  name: string
  input: unknown
}

/** Only `allow` (when given) is visible, never `deny`; one shape for views, requests and configs. */
export type { ToolFilter } from '@cordis-subagents/shared'

export type ToolChange = 'added' | 'removed'
