import { Schema } from 'cordis'
import { choice, count, countProblem, duration, durationProblem } from '@cordis-subagents/shared'
import { ModelOpenAIError } from './diagnostics.js'
import { headersProblem } from './header-values.js'
import {
  checkBaseURL, DEFAULT_BASE_URL, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_MODEL, DEFAULT_TIMEOUT,
  TEMPERATURE_RANGE, temperatureProblem,
  type MaxTokensParam, type OpenAIChatModelOptions,
} from './model.js'

export interface Config {
  name: string
  baseURL?: string
  apiKey?: string
  model: string
  timeout: number
  maxResponseBytes: number
  maxRetries: number
  temperature?: number
  headers?: Record<string, string>
  maxTokensParam: MaxTokensParam
  images?: boolean
  structuredOutput: boolean
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  name: Schema.string().default('openai')
    .description('Name the model is registered under. Agents pick it with `model: <name>` or `model: <name>:<model id>`.'),
  baseURL: Schema.string()
    .description('Root of the OpenAI-compatible API, e.g. `http://localhost:11434/v1` for Ollama. Default: `OPENAI_BASE_URL`, else `https://api.openai.com/v1`. A query (`?api-version=…`) is sent on every request; no fragment, no user info.'),
  apiKey: Schema.string().role('secret')
    .description('API key. Omitted: `OPENAI_API_KEY` at load time. Empty string: no key (local servers); no `Authorization` header is sent.'),
  model: Schema.string().default(DEFAULT_MODEL)
    .description('Model id used when the agent\'s model ref carries none (`<name>:<model id>` overrides it).'),
  timeout: duration({ min: 1 }).default(DEFAULT_TIMEOUT)
    .description('Deadline of one HTTP attempt in milliseconds, from sending the request to the last byte of the response body.'),
  maxResponseBytes: count({ min: 1 }).default(DEFAULT_MAX_RESPONSE_BYTES)
    .description('Largest response body accepted, in bytes (after decompression). A larger one ends the call with an error.'),
  maxRetries: count({ max: 100 }).default(DEFAULT_MAX_RETRIES)
    .description('Retries after a refused connection, a timeout, HTTP 408/409/429 or 5xx (with backoff; `Retry-After` is honoured).'),
  temperature: Schema.number().min(TEMPERATURE_RANGE.min).max(TEMPERATURE_RANGE.max)
    .description('Sampling temperature. Omitted: the server\'s default (some reasoning models accept only the default).'),
  headers: Schema.dict(Schema.string()).role('table')
    .description('Extra HTTP headers sent with every request (e.g. `HTTP-Referer` for OpenRouter).'),
  images: Schema.boolean().default(false)
    .description('The model accepts images: a tool result\'s images (an MCP tool\'s, `ToolResult.images`) are sent as `image_url` parts of a user message after the tool results. Off: the model reads only the result\'s text, which notes each image.'),
  maxTokensParam: choice({
    auto: '`max_completion_tokens` for api.openai.com, `max_tokens` elsewhere',
    max_tokens: '`max_tokens` (local servers, most compatible APIs)',
    max_completion_tokens: '`max_completion_tokens` (OpenAI reasoning models)',
  }).default('auto')
    .description('Request field that carries an agent\'s token limit.'),
  structuredOutput: Schema.boolean().default(false)
    .description('The endpoint supports structured outputs: a run with an output schema sends it as `response_format: { type: \'json_schema\' }`. Off: such a run answers through a `final_answer` tool instead.'),
})

/** The same rule `ctx.agents.registerModel` applies; checked here so the error names the key. */
const MODEL_NAME = /^[A-Za-z0-9_.\-/]{1,64}$/

/** The schema's defaults, for configs that did not pass through it (programmatic use). */
const DEFAULTS = Config({} as never)

/**
 * Fills in the environment defaults and checks what the schema cannot. Throws
 * `ModelOpenAIError('INVALID_CONFIG')` whose message names the offending key (never a secret's value).
 */
export function resolveConfig(config: Config, env: NodeJS.ProcessEnv = process.env): OpenAIChatModelOptions & { name: string } {
  const fail = (key: string, problem: string): never => {
    throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: config "${key}" ${problem}`)
  }
  const modelName = config.name ?? DEFAULTS.name!
  if (!MODEL_NAME.test(modelName)) {
    fail('name', `must be 1-64 of A-Z a-z 0-9 _ . - / (no ":"; it is the part before ":" in a model ref), got ${JSON.stringify(modelName)}.`)
  }
  const baseURL = (config.baseURL || env.OPENAI_BASE_URL || DEFAULT_BASE_URL).trim()
  try {
    checkBaseURL(baseURL)
  } catch (error) {
    if (!(error instanceof ModelOpenAIError) || config.baseURL) throw error
    throw new ModelOpenAIError('INVALID_CONFIG', `${error.message} (from OPENAI_BASE_URL)`)
  }
  const model = (config.model ?? DEFAULT_MODEL).trim()
  if (!model) fail('model', 'must be a non-empty model id.')
  const timeout = config.timeout ?? DEFAULT_TIMEOUT
  const maxResponseBytes = config.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  const maxRetries = config.maxRetries ?? DEFAULT_MAX_RETRIES
  const problem = durationProblem('timeout', timeout, { min: 1 })
    ?? countProblem('maxResponseBytes', maxResponseBytes, { min: 1 })
    ?? countProblem('maxRetries', maxRetries, { max: 100 })
    ?? temperatureProblem(config.temperature)
  if (problem) throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: config.${problem}`)
  const apiKey = config.apiKey ?? env.OPENAI_API_KEY ?? ''
  const keyField = config.apiKey === undefined && apiKey ? 'OPENAI_API_KEY (used because config "apiKey" is not set)' : 'config "apiKey"'
  const headerProblem = headersProblem(apiKey, config.headers, { key: keyField, headers: 'config "headers"' })
  if (headerProblem) throw new ModelOpenAIError('INVALID_CONFIG', `model-openai: ${headerProblem}`)
  const options: OpenAIChatModelOptions & { name: string } = {
    name: modelName,
    baseURL,
    apiKey,
    model,
    timeout,
    maxResponseBytes,
    maxRetries,
    maxTokensParam: config.maxTokensParam ?? DEFAULTS.maxTokensParam!,
  }
  if (config.temperature !== undefined) options.temperature = config.temperature
  if (config.structuredOutput) options.structuredOutput = true
  if (config.headers && Object.keys(config.headers).length) options.headers = { ...config.headers }
  if (config.images) options.images = true
  return options
}
