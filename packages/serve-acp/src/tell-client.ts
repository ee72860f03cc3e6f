import type { TellDelivery } from '@cordis-subagents/agent'
import { CodedError, headChars, TELL_METHOD } from '@cordis-subagents/shared'

/** What a session's `tell_parent` sends through: the connection's client side (the SDK's `AgentContext`). */
interface ClientSide {
  request<Response = unknown, Params = unknown>(method: string, params?: Params): Promise<Response>
}

/**
 * A session's `tell_parent` delivery: the extension request `_cordisSubagents/tell` to the client (a parent of ours,
 * which offered the tool in the session's crossing), which posts the message to the delegating agent's inbox. Its
 * refusal (TELL_LIMIT, NO_PARENT, INBOX_FULL, TELL_REFUSED in the error's data) is the tool's answer.
 */
export function tellClient(client: () => ClientSide | undefined, sessionId: string): TellDelivery {
  return async (message) => {
    const side = client()
    if (!side) throw new CodedError('NO_PARENT', 'the client is gone; put it in your final answer')
    try {
      await side.request(TELL_METHOD, { sessionId, message })
    } catch (error) {
      const data = (error as { data?: { code?: unknown } }).data
      const code = typeof data?.code === 'string' ? headChars(data.code, 32) : 'NO_PARENT'
      throw new CodedError(code, headChars(String((error as Error).message), 500))
    }
  }
}
