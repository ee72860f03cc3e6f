export { apply, type ChatBinding, Config, inject, name, type SubagentChat } from './plugin.js'
export type { AnswerBy } from './config.js'
export type { ChatSession } from './chat-runs.js'
export { ChatError, type ChatErrorCode } from './errors.js'
