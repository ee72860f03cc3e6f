// The OpenAI-compatible model plugin (one load per endpoint) and the model class it registers.
export { name, reusable, inject, apply } from './plugin.js'
export { Config, resolveConfig } from './config.js'
export { ModelOpenAIError, type ModelOpenAIErrorCode } from './diagnostics.js'
export { OpenAIChatModel, type MaxTokensParam, type OpenAIChatModelOptions } from './model.js'
