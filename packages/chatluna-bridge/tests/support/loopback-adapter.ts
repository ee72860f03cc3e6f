// A ChatLuna model adapter for the specs, built on ChatLuna's own adapter API (ChatLunaPlugin,
// PlatformModelClient, ModelRequester, ChatLunaChatModel) like its published adapters, talking to the
// loopback chat-completions server. Why not a published adapter: the npm registry this project uses
// holds koishi-plugin-chatluna 1.3.36 only; the qwen adapter that fits it (1.2.0) hard-codes its HTTPS
// endpoint, and the deepseek/ollama adapters (1.4.0) need koishi-plugin-chatluna ^1.4.0 and
// @chatluna/v1-shared-adapter ^1.0.50, neither of which is there. See the package README.
import { createRequire } from 'node:module'
import type { Context } from 'koishi'
import type * as Messages from '@langchain/core/messages'
import type * as Outputs from '@langchain/core/outputs'
import type { StructuredTool } from '@langchain/core/tools'
import type * as FunctionCalling from '@langchain/core/utils/function_calling'
import type * as Chat from 'koishi-plugin-chatluna/services/chat'
import type * as Client from 'koishi-plugin-chatluna/llm-core/platform/client'
import type * as Api from 'koishi-plugin-chatluna/llm-core/platform/api'
import type * as Model from 'koishi-plugin-chatluna/llm-core/platform/model'
import type { ClientConfig } from 'koishi-plugin-chatluna/llm-core/platform/config'
import type * as Types from 'koishi-plugin-chatluna/llm-core/platform/types'

// Koishi runs ChatLuna as CommonJS (its ESM entry cannot load koishi under native ESM), so the
// adapter takes ChatLuna's classes (and LangChain's) from the same CommonJS modules ChatLuna uses.
const require = createRequire(import.meta.url)
const { AIMessageChunk } = require('@langchain/core/messages') as typeof Messages
const { ChatGenerationChunk } = require('@langchain/core/outputs') as typeof Outputs
const { convertToOpenAITool } = require('@langchain/core/utils/function_calling') as typeof FunctionCalling
const { ChatLunaPlugin } = require('koishi-plugin-chatluna/services/chat') as typeof Chat
const { PlatformModelClient } = require('koishi-plugin-chatluna/llm-core/platform/client') as typeof Client
const { ModelRequester } = require('koishi-plugin-chatluna/llm-core/platform/api') as typeof Api
const { ChatLunaChatModel } = require('koishi-plugin-chatluna/llm-core/platform/model') as typeof Model
const { ModelCapabilities, ModelType } = require('koishi-plugin-chatluna/llm-core/platform/types') as typeof Types
type PluginConfig = Chat.ChatLunaPlugin.Config
type ChatLunaPlugin<R extends ClientConfig = ClientConfig, T extends PluginConfig = PluginConfig> = Chat.ChatLunaPlugin<R, T>
type BaseMessage = Messages.BaseMessage
type ModelRequestParams = Api.ModelRequestParams
type ModelInfo = Types.ModelInfo

interface LoopbackAdapterConfig extends Chat.ChatLunaPlugin.Config {
  platform: string
  endpoint: string
  models: string[]
}


function toOpenAI(message: BaseMessage): Record<string, unknown> {
  const type = message.getType()
  const content = typeof message.content === 'string' ? message.content : JSON.stringify(message.content)
  if (type === 'system') return { role: 'system', content }
  if (type === 'human') return { role: 'user', content }
  if (type === 'tool') return { role: 'tool', content, tool_call_id: (message as unknown as { tool_call_id: string }).tool_call_id }
  const calls = (message as unknown as { tool_calls?: { id?: string; name: string; args: unknown }[] }).tool_calls ?? []
  return {
    role: 'assistant',
    content,
    ...calls.length ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } })) } : {},
  }
}

class LoopbackRequester extends ModelRequester {
  logger: Context['logger'] extends (name: string) => infer L ? L : never

  constructor(ctx: Context, plugin: ChatLunaPlugin) {
    super(ctx, plugin.platformConfigPool, plugin.config, plugin)
    this.logger = ctx.logger('chatluna-loopback')
  }

  protected async *completionStreamInternal(params: ModelRequestParams): AsyncGenerator<Outputs.ChatGenerationChunk> {
    const response = await this.post('chat/completions', {
      model: params.model,
      messages: params.input.map(toOpenAI),
      tools: params.tools?.length ? params.tools.map((tool: StructuredTool) => convertToOpenAITool(tool)) : undefined,
      stream: false,
    }, { signal: params.signal })
    const body = await response.json() as {
      error?: { message: string }
      choices?: { message: { content: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[] } }[]
      usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
    }
    if (!response.ok || !body.choices?.length) throw new Error(`loopback model answered HTTP ${response.status}: ${body.error?.message ?? 'no choices'}`)
    const { content, tool_calls: calls = [] } = body.choices[0].message
    const message = new AIMessageChunk({
      content: content ?? '',
      tool_call_chunks: calls.map((call, index) => ({ id: call.id, name: call.function.name, args: call.function.arguments, index, type: 'tool_call_chunk' as const })),
      ...body.usage ? {
        usage_metadata: {
          input_tokens: body.usage.prompt_tokens, output_tokens: body.usage.completion_tokens, total_tokens: body.usage.total_tokens,
        },
      } : {},
    })
    yield new ChatGenerationChunk({ message, text: content ?? '' })
  }
}

class LoopbackClient extends PlatformModelClient {
  platform: string
  private readonly requester: LoopbackRequester

  constructor(ctx: Context, private readonly plugin: ChatLunaPlugin<ClientConfig, LoopbackAdapterConfig>) {
    super(ctx, plugin.platformConfigPool)
    this.platform = plugin.config.platform
    this.requester = new LoopbackRequester(ctx, plugin as unknown as ChatLunaPlugin)
  }

  async refreshModels(): Promise<ModelInfo[]> {
    const capabilities = [ModelCapabilities.ToolCall]
    return this.plugin.config.models.map((model) => ({ name: model, type: ModelType.llm, maxTokens: 32_000, capabilities }))
  }

  protected _createModel(model: string): Model.ChatLunaChatModel {
    const info = this._modelInfos[model]
    return new ChatLunaChatModel({ modelInfo: info, requester: this.requester, model, modelMaxContextSize: info.maxTokens, maxTokenLimit: 8_000, timeout: 30_000, maxRetries: 1, llmType: 'loopback' })
  }
}

function apply(ctx: Context, config: LoopbackAdapterConfig) {
  const plugin = new ChatLunaPlugin<ClientConfig, LoopbackAdapterConfig>(ctx, config, config.platform)
  ctx.on('ready', async () => {
    plugin.parseConfig((c) => [{
      apiKey: 'sk-loopback', apiEndpoint: c.endpoint, platform: c.platform, chatLimit: 1_000, timeout: 30_000, maxRetries: 1, concurrentMaxSize: 8,
    }])
    plugin.registerClient(() => new LoopbackClient(ctx, plugin))
    await plugin.initClient()
  })
}

/** The adapter as a Koishi plugin (it needs ChatLuna's service). */
export const loopbackAdapter = { name: 'chatluna-loopback-adapter', inject: ['chatluna'], apply }
