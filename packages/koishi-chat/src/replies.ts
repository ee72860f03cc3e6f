// A chat message that answers a posted question: a reply to the question's message (by its id, or
// its `[qN]` tag in the quoted text), or, when exactly one question is open in the channel, the next
// message from its run's starter (or an admin). Everything else goes on to the next middleware.
import type { Context, Session } from 'koishi'
import type { Agent } from '@cordis-subagents/agent'
import { answerRefusal, isAdmin, mayAnswer } from './authority.js'
import type { ChatRun, ChatRuns } from './chat-runs.js'
import { chatText, type ReplyElement, replyText } from './chat-text.js'
import type { Config } from './config.js'
import { ChatError } from './errors.js'

/** What to tell the chat, or undefined when the message is no answer of ours. */
export async function answerFromReply(
  koishi: Context, runs: ChatRuns, config: Config, session: Session, rootOf: (chat: ChatRun) => Agent | undefined,
): Promise<string | undefined> {
  if (!session.channelId) return undefined
  const channel = `${session.platform}:${session.channelId}`
  const quote = session.quote
  const open = runs.questions.inChannel(channel)
  if (!quote && open.length !== 1) return undefined
  const tag = quote ? runs.questions.quotedTag(channel, { id: quote.id, content: quote.content }) : open[0]!.tag
  if (!tag) return undefined
  try {
    const entry = runs.questions.get(channel, tag)
    const userId = session.userId ?? ''
    const admin = await isAdmin(koishi, session, config)
    // An unquoted message is an answer only from the starter or an admin: other talk in the channel goes on.
    if (!quote && !admin && userId !== entry.owner.starter) return undefined
    if (!mayAnswer(config, userId, entry.owner.starter, admin)) {
      if (!quote) return undefined
      throw new ChatError('NOT_ALLOWED', answerRefusal(config, tag))
    }
    const text = replyText((session.elements ?? []) as unknown as ReplyElement[], config.maxAnswerLength, session.selfId)
    const root = rootOf(entry.owner)
    return runs.answer(entry, text, session.username || userId, root && ((answer) => root.resume(answer)))
  } catch (error) {
    if (error instanceof ChatError) return quote || error.code !== 'NOT_FOUND' ? chatText(error.message) : undefined
    throw error
  }
}
