// The chat commands: `subagents` (list this channel's runs), `subagents.run <task>`,
// `subagents.answer <id> <answer>` and `subagents.cancel <id>`; each acts on this channel's runs only.
import type { Context, Session } from 'koishi'
import type { Agent } from '@cordis-subagents/agent'
import { peerText } from '@cordis-subagents/shared'
import { answerRefusal, isAdmin, mayAnswer } from './authority.js'
import type { ChatRun, ChatRuns } from './chat-runs.js'
import { chatText, shownLine } from './chat-text.js'
import type { Config } from './config.js'
import { ChatError } from './errors.js'

/** The longest task `subagents.run` takes (characters); a chat message is no place for a longer one. */
const MAX_TASK_LENGTH = 8000

export function registerCommands(
  koishi: Context, config: Config, runs: ChatRuns,
  start: (session: Session, task: string) => string, rootOf: (chat: ChatRun) => Agent | undefined,
): void {
  const channelOf = (session: Session) => {
    if (!session.channelId) throw new ChatError('NO_CHANNEL', 'Use this command in a channel.')
    return `${session.platform}:${session.channelId}`
  }
  // A ChatError is told to the chat (escaped); anything else is Koishi's to report.
  const told = async (act: () => string | Promise<string>): Promise<string> => {
    try {
      return await act()
    } catch (error) {
      if (error instanceof ChatError) return chatText(error.message)
      throw error
    }
  }
  const argument = (value: unknown, max: number) => peerText(typeof value === 'string' ? value.slice(0, max + 1) : '').trim()

  koishi.command('subagents', 'List the subagent runs of this channel: running, parked on a question, ended recently.')
    .action(({ session }) => told(() => runs.list(channelOf(session!))))

  koishi.command('subagents.run <task:text>', 'Start a run on a task; its questions and its answer are posted here.', { authority: config.runAuthority })
    .action(({ session }, task) => told(() => {
      channelOf(session!)
      // Koishi's `authority` check passes when there is no user record (no database): refuse rather than let anyone start runs.
      if (config.runAuthority > 0 && !(koishi as unknown as { database?: unknown }).database) {
        throw new ChatError('NOT_ALLOWED', `subagents.run needs a database to check runAuthority (${config.runAuthority}); none is loaded, so no run is started. `
          + 'Load a database plugin, or set runAuthority: 0 to let anyone start runs.')
      }
      const text = argument(task, MAX_TASK_LENGTH)
      if (!text) throw new ChatError('INVALID_ANSWER', 'Give the task: subagents.run <task>.')
      if (text.length > MAX_TASK_LENGTH) throw new ChatError('INVALID_ANSWER', `A task is at most ${MAX_TASK_LENGTH} characters.`)
      const id = start(session!, text)
      return chatText(`Run ${id} started: ${shownLine(text, 120)}`)
    }))

  koishi.command('subagents.answer <id:string> <answer:text>', 'Answer a question (its tag qN, or a run rN with one open question).')
    .action(({ session }, id, answer) => told(async () => {
      const channel = channelOf(session!)
      const entry = questionOf(runs, channel, String(id ?? ''))
      const userId = session!.userId ?? ''
      if (!mayAnswer(config, userId, entry.owner.starter, await isAdmin(koishi, session!, config))) throw new ChatError('NOT_ALLOWED', answerRefusal(config, entry.tag))
      const root = rootOf(entry.owner)
      const by = session!.username || userId
      return runs.answer(entry, argument(answer, config.maxAnswerLength), by, root && ((text) => root.resume(text)))
    }))

  koishi.command('subagents.cancel <id:string>', 'Cancel a run of this channel (its starter or an admin).')
    .action(({ session }, id) => told(async () => {
      const chat = runs.get(channelOf(session!), String(id ?? ''))
      const userId = session!.userId ?? ''
      if (userId !== chat.starter && !await isAdmin(koishi, session!, config)) {
        throw new ChatError('NOT_ALLOWED', `Only the user who started run ${chat.id} or an admin may cancel it.`)
      }
      runs.cancel(chat, `cancelled by ${shownLine(session!.username || userId, 64)}`)
      return `Cancelling run ${chat.id}.`
    }))
}

/** The open question an id names in this channel: a tag `qN`, or a run `rN` with exactly one open question. */
function questionOf(runs: ChatRuns, channel: string, id: string) {
  if (!/^r\d{1,9}$/.test(id)) return runs.questions.get(channel, id.slice(0, 16))
  const open = runs.questions.of(runs.get(channel, id))
  if (open.length === 1) return open[0]!
  throw new ChatError('NOT_FOUND', open.length ? `Run ${id} has ${open.length} open questions; name one by its tag (${open.map((q) => q.tag).join(', ')}).` : `Run ${id} waits for no answer.`)
}
