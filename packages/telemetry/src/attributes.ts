// The attribute names the spans carry: the OpenTelemetry GenAI semantic conventions where they have
// a name for it (`gen_ai.*`, `error.type`), `cordis_subagents.*` for what they do not cover.

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  agentId: 'gen_ai.agent.id',
  agentName: 'gen_ai.agent.name',
  toolName: 'gen_ai.tool.name',
  toolType: 'gen_ai.tool.type',
  toolCallId: 'gen_ai.tool.call.id',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
} as const

export const ERROR_TYPE = 'error.type'

/** Where a model call went (the model names it: `ChatModel.server`). */
export const SERVER = {
  address: 'server.address',
  port: 'server.port',
} as const

export const OURS = {
  depth: 'cordis_subagents.agent.depth',
  parentId: 'cordis_subagents.agent.parent_id',
  step: 'cordis_subagents.step',
  stopReason: 'cordis_subagents.stop_reason',
  steps: 'cordis_subagents.work.steps',
  toolCalls: 'cordis_subagents.work.tool_calls',
  delegations: 'cordis_subagents.work.delegations',
  delegatedInputTokens: 'cordis_subagents.usage.delegated.input_tokens',
  delegatedOutputTokens: 'cordis_subagents.usage.delegated.output_tokens',
  budgetName: 'cordis_subagents.budget.name',
  budgetLimit: 'cordis_subagents.budget.limit',
  budgetSpent: 'cordis_subagents.budget.spent',
  runId: 'cordis_subagents.run.id',
  provider: 'cordis_subagents.provider.name',
  label: 'cordis_subagents.subagent.label',
  childId: 'cordis_subagents.subagent.child_id',
  origin: 'cordis_subagents.subagent.origin',
  durationMs: 'cordis_subagents.subagent.duration_ms',
  errorCode: 'cordis_subagents.subagent.error_code',
  /** A failed model call's stable error code (`error.code` of the thrown error), when it has one. */
  modelErrorCode: 'cordis_subagents.error.code',
  /** Ms the model call waited on its endpoint's rate-limit backoff (the model gate), apart from its work. */
  rateLimitWaitMs: 'cordis_subagents.rate_limit.wait_ms',
  treeInputTokens: 'cordis_subagents.usage.input_tokens',
  treeOutputTokens: 'cordis_subagents.usage.output_tokens',
} as const

/** The attributes whose values are arrays (string[]); `flatAttributes: true` joins them with ",". */
export const ARRAY_ATTRIBUTES: readonly string[] = [GEN_AI.finishReasons]

/** An array attribute's value: the array, or with `flat` its items joined by "," (for receivers that reject arrays). */
export function listValue(values: string[], flat: boolean): string[] | string {
  return flat ? values.join(',') : values
}
