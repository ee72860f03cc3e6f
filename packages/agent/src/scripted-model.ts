import type { Usage } from '@cordis-subagents/shared'
import type { ChatModel, GenerateRequest, GenerateResponse, ModelToolCall } from './types.js'

/** One scripted reply: a partial response, or a function of the request that makes one. */
export type ScriptedReply =
  | ScriptedResponse
  | ((request: GenerateRequest, index: number) => ScriptedResponse | Promise<ScriptedResponse>)

export interface ScriptedResponse {
  text?: string
  toolCalls?: Array<Omit<ModelToolCall, 'id'> & { id?: string }>
  finishReason?: GenerateResponse['finishReason']
  usage?: Usage
  diagnostic?: string
}

export interface ScriptedModelOptions {
  /** Usage reported with every reply that does not set its own. */
  usage?: Usage
}

/**
 * A deterministic `ChatModel` for tests, the offline demo and benchmarks: replies come from a
 * list (one per call, in order) or from a function of the request. No network, no key.
 * It records every request it received in `requests`.
 */
export class ScriptedModel implements ChatModel {
  readonly requests: GenerateRequest[] = []
  private calls = 0
  private readonly script: ScriptedReply[] | ((request: GenerateRequest, index: number) => ScriptedResponse | Promise<ScriptedResponse>)

  constructor(
    script: ScriptedReply[] | ((request: GenerateRequest, index: number) => ScriptedResponse | Promise<ScriptedResponse>),
    private readonly options: ScriptedModelOptions = {},
  ) {
    this.script = script
  }

  static text(text: string, usage?: Usage): ScriptedResponse {
    return usage ? { text, usage } : { text }
  }

  static call(name: string, input: unknown, id?: string): ScriptedResponse {
    return { toolCalls: [{ name, input, ...(id ? { id } : {}) }] }
  }

  get callCount(): number {
    return this.calls
  }

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const index = this.calls++
    this.requests.push({ ...request, messages: request.messages.map((message) => ({ ...message })) })
    if (request.signal.aborted) throw request.signal.reason
    let reply: ScriptedReply | undefined
    if (typeof this.script === 'function') {
      reply = this.script
    } else {
      reply = this.script[index]
      if (reply === undefined) {
        throw new Error(`ScriptedModel: the script has ${this.script.length} replies and reply ${index + 1} was requested.`)
      }
    }
    const response = typeof reply === 'function' ? await abortable(reply(request, index), request.signal) : reply
    return this.normalize(response, index)
  }

  private normalize(response: ScriptedResponse, index: number): GenerateResponse {
    const toolCalls = (response.toolCalls ?? []).map((call, i) => ({ ...call, id: call.id ?? `call_${index}_${i}` }))
    const result: GenerateResponse = {
      text: response.text ?? '',
      toolCalls,
      finishReason: response.finishReason ?? (toolCalls.length ? 'tool-calls' : 'stop'),
    }
    const usage = response.usage ?? this.options.usage
    if (usage) result.usage = usage
    if (response.diagnostic) result.diagnostic = response.diagnostic
    return result
  }
}

function abortable<T>(value: T | Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    Promise.resolve(value).then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
