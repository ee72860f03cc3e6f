import { AgentRuntime } from './runtime.js'

export type {
  AgentEvent, AgentUsage, AgentWork, AssistantMessage, BudgetLimits, BudgetSpend, ChatModel, FinishReason, GenerateRequest,
  GenerateResponse, Message, ModelToolCall, ResumeOptions, RunOptions, RunResult, StopReason, ToolMessage, UserMessage,
} from './types.js'
export { AgentError, type AgentErrorCode } from './errors.js'
export type { DelegationAccount, DelegationEntry, DelegationState } from './children-account.js'
export { RateLimitedError, type RateLimitConfig, type RateLimitInfo } from './rate-limit.js'
export type { EndpointStatus } from './model-gate.js'
export { Agent } from './agent.js'
export { AgentHandle, type AgentHandleState, type AgentHandleStatus, type CloseOptions, DEFAULT_SHUTDOWN_MS, type PostOptions } from './handle.js'
export type { AgentCheckpoint, ParkedTurnCheckpoint } from './checkpoint.js'
export { MAX_SUSPENSION_STATE_BYTES } from './suspension.js'
export { askParentTool, type AskParentOptions } from './ask-parent.js'
export { budgetNote, type BudgetNoteOptions, DEFAULT_WRAP_UP_AT, WRAP_UP_HINT } from './budget-note.js'
export { DEFAULT_TELL_LENGTH, DEFAULT_TELLS, MAX_TELL_LENGTH, MAX_TELLS, type TellDelivery, tellParentTool, type TellParentOptions } from './tell-parent.js'
export type { AgentObserver } from './observers.js'
export type { BudgetEvent, ContinueDecision, ContinueHook, ContinueState } from './continue-hooks.js'
export type {
  AfterLLMEvent, AfterToolEvent, AgentHookInfo, AgentHooks, BeforeLLMEvent, BeforeToolDecision, BeforeToolEvent, MetricRecord, MetricSink,
} from './hooks.js'
export {
  DEFAULT_OUTPUT_CORRECTIONS, FINAL_ANSWER_TOOL, MAX_OUTPUT_CORRECTIONS, MAX_OUTPUT_SCHEMA_CHARS, MAX_OUTPUT_SCHEMA_DEPTH,
  MAX_OUTPUT_VALUE_CHARS,
  type OutputContract, outputContract, type OutputOptions, outputPrompt, parseJson,
} from './output.js'
export { Transcript } from './transcript.js'
export { Inbox, type InboxDelegation, type InboxMessage, MAX_INBOX_MESSAGES, MAX_INBOX_MESSAGE_LENGTH } from './inbox.js'
export { Budget, BUDGET_KEYS } from './budget.js'
export { abortFlat } from './abort.js'
export { ScriptedModel, type ScriptedReply, type ScriptedResponse, type ScriptedModelOptions } from './scripted-model.js'
export { AgentRuntime } from './runtime.js'
export type { CreateAgentOptions } from './create-options.js'
export type { ServedAgentOptions, ServeRequest } from './served.js'

export default AgentRuntime
