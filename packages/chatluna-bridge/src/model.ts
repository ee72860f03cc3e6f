import type { ChatModel, GenerateRequest, GenerateResponse } from '@cordis-subagents/agent'
import { capBytes, describeError } from '@cordis-subagents/shared'
import type { ChatLunaServiceLike } from './chatluna.js'
import { ChatLunaBridgeError } from './errors.js'
import { fromReply, toLangChainTools, toMessageLikes } from './messages.js'

/** A diagnostic names the model and ChatLuna's message, at most this many bytes (no request body, no key). */
const MAX_DIAGNOSTIC_BYTES = 1024
/** `<platform>/<model>`, ChatLuna's full model name. */
const FULL_NAME = /^[^/\s]+\/\S+$/

/**
 * ChatLuna's configured models as one `ctx.agents` model: `<name>:<platform>/<model>` runs a call on
 * ChatLuna's `<platform>/<model>` (the adapter, key pool, proxy and retries the Koishi user set up
 * there). Failure contract as model-openai's: a failed call resolves `finishReason: 'error'` with a
 * bounded diagnostic; only an aborted signal (or a ref naming no model) throws.
 */
export class ChatLunaModel implements ChatModel {
  constructor(
    private readonly chatluna: () => ChatLunaServiceLike,
    private readonly name: string,
    private readonly defaultModel: string | undefined,
  ) {}

  rateLimitKey(modelId: string | undefined): string {
    return `chatluna:${modelId ?? this.defaultModel ?? ''}`
  }

  private fullName(modelId: string | undefined): string {
    const full = modelId ?? this.defaultModel
    if (!full) throw new ChatLunaBridgeError('CHATLUNA_NO_MODEL', `Model ref "${this.name}" names no ChatLuna model: use "${this.name}:<platform>/<model>" (as ChatLuna lists it, e.g. "${this.name}:openai/gpt-4o") or set the bridge's defaultModel.`)
    if (!FULL_NAME.test(full)) throw new ChatLunaBridgeError('CHATLUNA_UNKNOWN_MODEL', `"${full.slice(0, 120)}" is not a ChatLuna model name: write it "<platform>/<model>", as ChatLuna's model list shows it.`)
    return full
  }

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const { signal } = request
    if (signal.aborted) throw abortError(signal)
    const full = this.fullName(request.modelId)
    const chatluna = this.chatluna()
    if (!chatluna.platform.findModel(full).value) {
      throw new ChatLunaBridgeError('CHATLUNA_UNKNOWN_MODEL', `ChatLuna has no model "${full}": load and configure its adapter (the platform before the slash), or pick a model ChatLuna lists.`)
    }
    // ChatLuna gets an abort it knows as one (an AbortError): an Error reason of ours (a cancel, a
    // limit) would reach its adapter's fetch as a failed request, and ChatLuna locks an API key
    // after repeated failures.
    const controller = new AbortController()
    const chatlunaSignal = controller.signal
    const forward = () => controller.abort(new DOMException('The agent run was aborted.', 'AbortError'))
    signal.addEventListener('abort', forward, { once: true })
    try {
      const model = (await chatluna.createChatModel(full)).value
      if (!model) return failure(full, 'ChatLuna could not create the model (its adapter has no usable key or is still loading)')
      if (signal.aborted) throw abortError(signal)
      const reply = await model.invoke(toMessageLikes(request.system, request.messages), {
        signal: chatlunaSignal,
        ...request.tools.length ? { tools: toLangChainTools(request.tools) } : {},
      })
      return fromReply(reply, request)
    } catch (error) {
      if (signal.aborted) throw abortError(signal)
      return failure(full, describeError(error))
    } finally {
      signal.removeEventListener('abort', forward)
    }
  }
}

function failure(full: string, why: string): GenerateResponse {
  return { text: '', toolCalls: [], finishReason: 'error', diagnostic: capBytes(`ChatLuna model "${full}" failed: ${why}`, MAX_DIAGNOSTIC_BYTES, '…') }
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : Object.assign(new Error('The model call was aborted.'), { name: 'AbortError' })
}
