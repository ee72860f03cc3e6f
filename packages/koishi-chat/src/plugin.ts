// The Koishi plugin: `subagents.run` starts a root run from a chat, the service's events bind its
// delegations to that chat, a reply answers a posted question, and the `subagents` commands list,
// answer and cancel. `ctx.subagentChat` is the seam another integration binds its own root run with.
import type { Context as CordisContext } from 'cordis'
import type { Context } from 'koishi'
import type { Agent } from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/subagents-service'
import { describeError } from '@cordis-subagents/shared'
import { type ChatRun, ChatRuns, type ChatSession } from './chat-runs.js'
import { Config, LIVE_OPTIONS } from './config.js'
import { registerCommands } from './commands.js'
import { answerFromReply } from './replies.js'

export { Config }
export const name = 'cordis-subagents-koishi-chat'
export const inject = { required: ['agents', 'subagents'], optional: ['database'] }

declare module 'koishi' {
  interface Context {
    subagentChat: SubagentChat
  }
}

/** A root run bound to a chat session: its delegations' questions go to that channel until `dispose()`. */
export interface ChatBinding {
  /** The chat run id (`r1`) the `subagents` commands name. */
  readonly id: string
  /**
   * How the binding ended, undefined while it is live: `released` (`dispose()`), or `cancelled (<why>)` when we ended it
   * (`subagents.cancel`, `timeout`, its channel gone, the plugin reloaded or unloaded), having cancelled its live delegations.
   */
  readonly outcome: string | undefined
  /** Ends the binding (the run's questions no longer take chat answers); idempotent, and a no-op once it ended. */
  dispose(): void
}

/** `ctx.subagentChat`: the seam for other Koishi integrations (ChatLuna's agent, a custom command). */
export interface SubagentChat {
  /**
   * Binds the delegations under `agent` (a root agent of `ctx.agents`) to `session`'s channel: a
   * question any of them parks on is posted there and answered from the chat. The caller keeps
   * running and reading its agent (a root parked on a child's question goes on when the chat answers:
   * read it with `agent.nextResult()`); `cancel` cancels the run's live delegations. Throws
   * `RUN_LIMIT` or `NO_CHANNEL` (ChatError).
   */
  bind(agent: { id: string }, session: ChatSession, options?: { task?: string }): ChatBinding
  /** Starts a root run on `task` the way `subagents.run` does and returns its chat run id (`r1`); throws like `bind`. */
  run(session: ChatSession, task: string): string
}

/** What a live run's channel is told, and its questions' note, when the plugin is disposed. */
const DISPOSED = 'the subagents chat plugin was reloaded or unloaded'

export function apply(koishi: Context, given: Config): void {
  const ctx = koishi as unknown as CordisContext
  const logger = koishi.logger('subagent-chat')
  // Each option is read where it is used, so a change of a live one (the console's form, Koishi's loader) is taken here
  // without a reload, which would end every live run; a change of any other reloads the plugin.
  // One `accept` per key: cordis 3 compares an accept's keys only up to the first changed one, so one accept of them
  // all would reload the plugin when two of its keys change at once.
  const config: Config = { ...given }
  for (const key of LIVE_OPTIONS) {
    ctx.accept([key], (next: Config) => {
      Object.assign(config, { [key]: next[key] })
      runs.trimEnded()
    })
  }
  const runs = new ChatRuns(config, ctx.subagents, (message) => logger.warn('%s', message), ctx.root)
  const owned = new Map<ChatRun, Agent>()

  ctx.subagents.observe({
    'subagent/start': (info) => runs.onStart(info),
    'subagent/pending': (info, question) => runs.onPending(info, question),
    'subagent/resume': (info, questionId) => runs.onResume(info, questionId),
    'subagent/end': (info, outcome) => runs.onEnd(info, outcome),
  })

  const start = (given: ChatSession, task: string): string => {
    const session = poster(given)
    const { model, persona, label } = config.agent
    const agent = ctx.agents.create({ ...model ? { model } : {}, ...persona ? { persona } : {}, label: label || 'chat' })
    let chat: ChatRun
    try {
      chat = runs.bind(agent.id, session, task, () => void agent.dispose().catch(() => {}))
    } catch (error) {
      void agent.dispose()
      throw error
    }
    owned.set(chat, agent)
    void drive(chat, agent, task).finally(() => owned.delete(chat))
    return chat.id
  }

  // A root run started here: its own turns, the root's own questions, its final answer posted.
  const drive = async (chat: ChatRun, agent: Agent, task: string) => {
    try {
      let result = await agent.run(task)
      while (result.stopReason === 'pending') {
        if (result.question) runs.ask(chat, result.question, result.question.path.at(-1))
        result = await agent.nextResult()
      }
      runs.end(chat, result.stopReason, result.text)
    } catch (error) {
      runs.end(chat, 'error', chat.cancelled ? '' : describeError(error))
    } finally {
      await agent.dispose().catch(() => {})
    }
  }

  const bind = (agent: { id: string }, session: ChatSession, options: { task?: string } = {}): ChatBinding => {
    const chat: ChatRun = runs.bind(agent.id, poster(session), options.task ?? `bound by an integration (agent ${agent.id})`, (reason) => {
      for (const runId of runs.delegationsOf(chat)) ctx.subagents.cancel(runId, reason)
      runs.end(chat, 'cancelled', '')
    })
    return { id: chat.id, get outcome() { return chat.outcome }, dispose: () => runs.end(chat, 'released') }
  }

  ctx.set('subagentChat', { bind, run: start } satisfies SubagentChat)

  koishi.middleware(async (session, next) => {
    const reply = await answerFromReply(koishi, runs, config, session, (chat) => owned.get(chat))
    return reply === undefined ? next() : reply
  })

  registerCommands(koishi, config, runs, start, (chat) => owned.get(chat))

  // A channel the bot can no longer post to: its runs are cancelled rather than parked until `timeout`.
  // Satori emits `guild-removed` and `guild-deleted` (and the member pair) together, so one name of each pair is
  // enough; `channel-deleted` is a Satori event name Koishi's typed `Events` does not list.
  type Where = { platform: string, selfId?: string, guildId?: string, channelId?: string, userId?: string }
  const on = koishi.on.bind(koishi) as unknown as (name: string, listener: (session: Where) => void) => () => void
  const gone = (session: Where, key: 'guildId' | 'channelId', why: string) =>
    void runs.gone({ platform: session.platform, selfId: session.selfId, [key]: session[key] }, why)
  on('guild-removed', (session) => gone(session, 'guildId', 'the bot is no longer in its guild'))
  on('guild-member-removed', (session) => {
    if (session.userId && session.userId === session.selfId) gone(session, 'guildId', 'the bot was removed from its guild')
  })
  on('channel-deleted', (session) => gone(session, 'channelId', 'its channel was deleted'))

  // Every live run ends as a cancel does, its channel told (README, "Bounds and lifetime"); the unload waits for no post.
  ctx.effect(() => () => {
    runs.clear(DISPOSED)
    for (const agent of owned.values()) void agent.dispose().catch(() => {})
    owned.clear()
  })
}


type KoishiSession = ChatSession & {
  bot?: { sendMessage?(channelId: string, content: string, referrer?: unknown, options?: { session: unknown }): Promise<string[]> }
  event?: { referrer?: unknown }
}

/**
 * A Koishi session posts through its bot: a refused message rejects there, where `Session.send` logs it and
 * resolves `[]`, as it also does for a message sent through an adapter that reports no ids (the mock adapter).
 */
function poster(session: ChatSession): ChatSession {
  const { bot, event } = session as KoishiSession
  const channelId = session.channelId
  if (typeof bot?.sendMessage !== 'function' || !channelId) return session
  const { platform, guildId, userId, selfId } = session
  return {
    platform, channelId, ...guildId ? { guildId } : {}, ...userId ? { userId } : {}, ...selfId ? { selfId } : {},
    send: async (content) => {
      const ids = await bot.sendMessage!(channelId, content, event?.referrer, { session })
      return ids.length ? ids : undefined
    },
  }
}
