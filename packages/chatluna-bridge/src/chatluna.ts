// The part of ChatLuna (koishi-plugin-chatluna 1.3) the bridge uses, typed structurally: the bridge
// is loaded by Koishi beside ChatLuna and reaches it as `ctx.chatluna`, so it imports none of
// ChatLuna's modules (which would tie it to one build of ChatLuna and of Koishi).
import type { Context } from 'cordis'
import type { StructuredToolInterface } from '@langchain/core/tools'

/** One reply of a ChatLuna chat model (a LangChain AIMessage). */
export interface ChatLunaReply {
  content: unknown
  tool_calls?: { id?: string; name: string; args: Record<string, unknown> }[]
  usage_metadata?: { input_tokens?: number; output_tokens?: number }
  response_metadata?: Record<string, unknown>
}

/** A ChatLuna chat model (a LangChain chat model): messages in OpenAI's shape, our tools as LangChain tools. */
interface ChatLunaChatModelLike {
  invoke(messages: Record<string, unknown>[], options: { signal: AbortSignal; tools?: StructuredToolInterface[] }): Promise<ChatLunaReply>
}

/** ChatLuna's tool entry (`ChatLunaTool`): how its agent creates the LangChain tool it calls. */
export interface ChatLunaToolEntry {
  /** Set by ChatLuna when the entry is registered. */
  id?: string
  name: string
  description: string
  createTool: () => StructuredToolInterface
  selector: () => boolean
  meta?: { source?: string; group?: string; tags?: string[] }
}

export interface ChatLunaServiceLike {
  createChatModel(fullModelName: string): Promise<{ value: ChatLunaChatModelLike | undefined }>
  platform: {
    registerTool(name: string, tool: ChatLunaToolEntry): () => void
    unregisterTool(name: string): void
    /** A copy of the entry (ChatLuna set its `id` at registration), or an empty one when none is registered. */
    getTool(name: string): { id?: string }
    findModel(fullModelName: string): { value: unknown }
  }
}

/** `ctx.chatluna`, which ChatLuna declares on Koishi's Context only. */
export function chatlunaOf(ctx: Context): ChatLunaServiceLike {
  return (ctx as unknown as { chatluna: ChatLunaServiceLike }).chatluna
}
