// The chat runs of this process: a root run bound to the Koishi session it was started from, the
// delegations under it (by the service's events), the questions they park on (posted to that
// channel) and the one way an answer from the chat reaches the service.
import type { SubagentOutcome, SubagentRunInfo, SubagentService } from '@cordis-subagents/subagents-service'
import { describeError, MAX_QUESTION_PATH, type PendingQuestion, questionVia } from '@cordis-subagents/shared'
import type { Config } from './config.js'
import { ChatError } from './errors.js'
import { chatText, optionAnswer, questionPost, shownLine, shownWithin } from './chat-text.js'
import { nextRunId } from './ids.js'
import { type OpenQuestion, QuestionBook } from './questions.js'

/** What a chat run needs of the session it was started from (a Koishi `Session` has it). */
export interface ChatSession {
  platform: string
  channelId?: string
  guildId?: string
  userId?: string
  /** The bot's own id on the platform: a `guild-member-removed` of it ends only the runs it posts for. */
  selfId?: string
  /**
   * Posts to the channel: the ids of the messages sent, `[]` when nothing was sent (Koishi's `Session.send`
   * when the platform refused it), undefined when sent but the adapter reports no ids.
   */
  send(content: string): Promise<string[] | undefined>
}

export interface ChatRun {
  /** `r1`, `r2`, … in this process, on across reloads of the plugin (`nextRunId`): an id never names two runs. */
  readonly id: string
  readonly channel: string
  readonly platform: string
  readonly channelId: string
  readonly guildId?: string
  readonly selfId?: string
  /** The user who started it. */
  readonly starter: string
  readonly task: string
  readonly startedAt: number
  /** The root agent's id: delegations whose parent is it (or under it) belong to this run. */
  readonly rootAgentId: string
  endedAt?: number
  outcome?: string
  session?: ChatSession
  /** How this run is stopped: dispose the root agent (a run started here) or cancel its delegations (a bound one). */
  stop?: (reason: string) => void
  cancelled?: string
  timer?: ReturnType<typeof setTimeout>
}

type Host = Pick<SubagentService, 'resume' | 'pending' | 'cancel'>

export class ChatRuns {
  readonly questions: QuestionBook<ChatRun>
  private readonly live = new Map<string, ChatRun>()
  private readonly ended: ChatRun[] = []
  /** Agent id → the chat run its delegations belong to (the root agent, and each in-process child). */
  private readonly agents = new Map<string, ChatRun>()
  /** Live delegation run id → its chat run, its parent agent and child agent ids. */
  private readonly runs = new Map<string, { chat: ChatRun, parentId: string, childId?: string }>()
  /** In-process child agent id → the delegation run it runs in (to name a question's whole path). */
  private readonly runOfAgent = new Map<string, string>()
  /** Set by `clear()` (the plugin's dispose): no run is bound any more. */
  private closed = false

  /**
   * `config` is read where each option is used, so a change the plugin takes live (`ctx.accept`) applies from the next
   * use; `app` (what the plugin is loaded in) keeps the closed questions' notes across a reload (QuestionBook).
   */
  constructor(private readonly config: Config, private readonly host: Host, private readonly log: (message: string) => void, app?: object) {
    this.questions = new QuestionBook<ChatRun>(app)
  }

  /** Binds a root agent's delegations to a session: refused past `maxRuns` / `maxRunsPerChannel` / `maxRunsPerUser`. */
  bind(rootAgentId: string, session: ChatSession, task: string, stop: (reason: string) => void): ChatRun {
    if (this.closed) throw new ChatError('NOT_RUNNING', 'The chat plugin is stopping.')
    if (!session.channelId) throw new ChatError('NO_CHANNEL', 'This session has no channel to post questions to.')
    const channel = `${session.platform}:${session.channelId}`
    if (this.live.size >= this.config.maxRuns) throw new ChatError('RUN_LIMIT', `${this.live.size} chat runs are live (maxRuns); wait for one to end or cancel one.`)
    const here = [...this.live.values()].filter((run) => run.channel === channel)
    if (here.length >= this.config.maxRunsPerChannel) {
      throw new ChatError('RUN_LIMIT', `${here.length} runs are live in this channel (maxRunsPerChannel: ${here.map((run) => run.id).join(', ')}); wait for one or cancel one.`)
    }
    // A session without a user id (an integration's) is bounded by maxRuns alone.
    const live = [...this.live.values()]
    const mine = session.userId ? live.filter((run) => run.platform === session.platform && run.starter === session.userId) : []
    if (mine.length >= this.config.maxRunsPerUser) {
      const where = mine.map((run) => `${run.id} in ${shownLine(run.channel, 64)}`).join(', ')
      throw new ChatError('RUN_LIMIT', `You have ${mine.length} runs live (maxRunsPerUser: ${where}); answer or cancel one (subagents.cancel <id> in its channel), or wait for one to end.`)
    }
    const chat: ChatRun = {
      id: nextRunId(), channel, platform: session.platform, channelId: session.channelId,
      ...session.guildId ? { guildId: session.guildId } : {}, ...session.selfId ? { selfId: session.selfId } : {}, starter: session.userId ?? '',
      task: shownLine(task, 120), startedAt: Date.now(), rootAgentId, session, stop,
    }
    this.live.set(chat.id, chat)
    this.agents.set(rootAgentId, chat)
    // The bound this run starts with: a later change of `timeout` applies to the runs started after it.
    const timeout = this.config.timeout
    if (timeout > 0) {
      chat.timer = setTimeout(() => this.cancel(chat, `timeout: the run passed ${timeout} ms (timeout)`), timeout)
      chat.timer.unref?.()
    }
    return chat
  }

  get(channel: string, id: string): ChatRun {
    const chat = this.live.get(id) ?? this.ended.find((run) => run.id === id)
    if (!chat || chat.channel !== channel) throw new ChatError('NOT_FOUND', `No run ${shownLine(id, 32)} in this channel (\`subagents\` lists them).`)
    return chat
  }

  cancel(chat: ChatRun, reason: string): void {
    if (chat.endedAt !== undefined) throw new ChatError('NOT_RUNNING', `Run ${chat.id} already ended (${chat.outcome}).`)
    chat.cancelled ??= reason
    chat.stop?.(reason)
  }

  // The service's events, for the delegations under a chat run.
  onStart(info: SubagentRunInfo): void {
    const chat = this.agents.get(info.parentId)
    if (!chat || chat.endedAt !== undefined) return
    this.runs.set(info.runId, { chat, parentId: info.parentId, ...info.childId ? { childId: info.childId } : {} })
    if (info.childId) {
      this.agents.set(info.childId, chat)
      this.runOfAgent.set(info.childId, info.runId)
    }
  }

  onPending(info: SubagentRunInfo, question: PendingQuestion): void {
    const entry = this.runs.get(info.runId)
    if (!entry) return
    // The path from the root's child down to the asker: the runs above this one (in-process
    // parents), this run, and the path the question came with from below it.
    let via = questionVia(info.runId, question)
    for (let parent = this.runOfAgent.get(entry.parentId), hops = 0; parent !== undefined && hops < MAX_QUESTION_PATH; hops++) {
      via = questionVia(parent, via)
      parent = this.runOfAgent.get(this.runs.get(parent)?.parentId ?? '')
    }
    this.ask(entry.chat, via, info.runId)
  }

  onResume(_info: SubagentRunInfo, questionId: string): void {
    this.questions.close(questionId, 'it was answered already (elsewhere), and its run went on')
  }

  onEnd(info: SubagentRunInfo, outcome: SubagentOutcome): void {
    const entry = this.runs.get(info.runId)
    if (!entry) return
    this.runs.delete(info.runId)
    if (entry.childId) {
      this.agents.delete(entry.childId)
      this.runOfAgent.delete(entry.childId)
    }
    for (const open of this.questions.ofRun(info.runId)) {
      this.questions.close(open.question.id, `its run ended ${outcome.stopReason} before an answer`)
      if (entry.chat.cancelled === undefined) this.post(entry.chat, `[${open.tag}] takes no answer any more: subagent ${info.runId} ended ${outcome.stopReason}.`)
    }
  }

  /** A question of the tree, posted once to the chat run's channel (runId undefined: the root's own). */
  ask(chat: ChatRun, question: PendingQuestion, runId: string | undefined): void {
    if (chat.endedAt !== undefined) return
    const entry = this.questions.add(chat, question, runId)
    if (entry) this.postQuestion(chat, entry)
  }

  /** Posts an open question (`before`: a line above it, as for a refused answer); a post the platform refuses cancels the run. */
  private postQuestion(chat: ChatRun, entry: OpenQuestion<ChatRun>, before?: string): void {
    const { question } = entry
    const how = `Reply to this message to answer${question.options?.length ? ' (a number picks an option)' : ''}, or: subagents.answer ${entry.tag} <answer>`
    const text = questionPost(entry.tag, chat.id, question, this.config.maxQuestionLength, how)
    const failed = (why: string) => {
      this.log(`[QUESTION_NOT_POSTED] question ${entry.tag} of run ${chat.id} could not be posted to ${shownLine(chat.channel, 64)} (${why}); the run is cancelled, as nobody there can answer it.`)
      if (chat.endedAt === undefined) this.cancel(chat, `question ${entry.tag} could not be posted to this channel (QUESTION_NOT_POSTED)`)
    }
    chat.session?.send(before === undefined ? text : `${chatText(before)}\n${text}`).then(
      (ids) => ids?.length === 0 ? failed('the platform took no message') : this.questions.posted(entry, ids ?? []),
      (error) => failed(shownLine(describeError(error), 300)),
    )
  }

  /**
   * The run answered `entry` is parked on the same question again (the provider refused the answer, as an ACP
   * permission question does an answer that is no option): it opens again, posted with the provider's reason.
   */
  private refusedAnswer(entry: OpenQuestion<ChatRun>, next: unknown): void {
    const outcome = next as { stopReason?: string, question?: { id?: string }, diagnostic?: string } | undefined
    const chat = entry.owner
    if (outcome?.stopReason !== 'pending' || outcome.question?.id !== entry.question.id || chat.endedAt !== undefined) return
    if (!this.questions.reopen(entry)) return
    const why = outcome.diagnostic?.trim() ? `: ${shownLine(outcome.diagnostic, 300).replace(/[\s.]+$/, '')}` : ''
    const pick = entry.question.options?.length ? 'answer with an option\'s number' : 'answer it again'
    this.postQuestion(chat, entry, `Your answer to [${entry.tag}] was not taken${why}. It waits again: ${pick}.`)
  }

  /**
   * The channel or guild is gone for the bot (deleted, or the bot removed): its live runs are
   * cancelled, since no question can be posted there any more. Returns the ids cancelled.
   */
  gone(where: { platform: string, selfId?: string, guildId?: string, channelId?: string }, why: string): string[] {
    const sameBot = (run: ChatRun) => where.selfId === undefined || run.selfId === undefined || run.selfId === where.selfId
    const there = (run: ChatRun) => (where.guildId !== undefined && run.guildId === where.guildId)
      || (where.channelId !== undefined && run.channelId === where.channelId)
    const hit = [...this.live.values()].filter((run) => run.cancelled === undefined && run.platform === where.platform)
      .filter((run) => sameBot(run) && there(run))
    for (const run of hit) {
      this.log(`[CHANNEL_GONE] run ${run.id} in ${shownLine(run.channel, 64)} is cancelled: ${why}.`)
      this.cancel(run, `${why} (CHANNEL_GONE)`)
    }
    return hit.map((run) => run.id)
  }

  /**
   * Answers an open question (the caller checked who may): closed here first, synchronously, so a
   * second reply is told it was answered; then `ctx.subagents.resume` (or the root agent's own
   * `resume`), whose refusal is posted to the chat. Returns what to tell the person.
   */
  answer(entry: OpenQuestion<ChatRun>, raw: string, by: string, resumeRoot?: (answer: string) => Promise<unknown>): string {
    if (!this.questions.isOpen(entry)) this.questions.get(entry.owner.channel, entry.tag)
    if (!raw) throw new ChatError('INVALID_ANSWER', `An answer to [${entry.tag}] cannot be empty.`)
    if (raw.length > this.config.maxAnswerLength) {
      throw new ChatError('INVALID_ANSWER', `That answer is over ${this.config.maxAnswerLength} characters (maxAnswerLength); [${entry.tag}] still waits for a shorter one.`)
    }
    const answer = optionAnswer(entry.question, raw)
    const { runId, owner: chat, tag } = entry
    if (runId !== undefined && !this.host.pending().some((p) => p.runId === runId && p.question.id === entry.question.id)) {
      this.questions.close(entry.question.id, 'it was answered already (elsewhere), or its run stopped waiting')
      throw new ChatError('ALREADY_ANSWERED', `[${tag}] takes no answer any more: it was answered already (elsewhere), or its run stopped waiting.`)
    }
    this.questions.close(entry.question.id, `it was answered by ${shownLine(by, 64)}`)
    const refused = (error: unknown) => this.post(chat, `Your answer to [${tag}] was not taken: ${shownLine(describeError(error), 300)}`)
    const next = runId !== undefined ? this.host.resume(runId, answer) : resumeRoot?.(answer)
    next?.then((outcome) => this.refusedAnswer(entry, outcome), refused)
    return `Answer to [${tag}] passed on; run ${chat.id} goes on.`
  }

  /** The chat run ended: its bindings and questions go, and the final line is posted (when given). */
  end(chat: ChatRun, outcome: string, text?: string): void {
    if (chat.endedAt !== undefined) return
    chat.endedAt = Date.now()
    chat.outcome = chat.cancelled ? `cancelled (${chat.cancelled})` : outcome
    if (chat.timer) clearTimeout(chat.timer)
    chat.timer = undefined
    this.closeQuestions(chat, chat.outcome)
    for (const [agentId, owner] of this.agents) if (owner === chat) this.agents.delete(agentId)
    for (const [runId, entry] of this.runs) {
      if (entry.chat !== chat) continue
      this.runs.delete(runId)
      if (entry.childId) this.runOfAgent.delete(entry.childId)
    }
    this.live.delete(chat.id)
    if (text !== undefined) this.postEnd(chat, text)
    chat.session = undefined
    chat.stop = undefined
    this.ended.push(chat)
    this.trimEnded()
  }

  /** Keeps the newest `keepEnded` ended runs (again after a live change of it). */
  trimEnded(): void {
    while (this.ended.length > this.config.keepEnded) this.ended.shift()
  }

  private closeQuestions(chat: ChatRun, outcome: string): void {
    for (const open of this.questions.of(chat)) this.questions.close(open.question.id, `run ${chat.id} ended ${outcome}`)
  }

  /** The `subagents` list of one channel: live runs (with open questions), then recently ended ones. */
  list(channel: string): string {
    const live = [...this.live.values()].filter((run) => run.channel === channel)
    const ended = this.ended.filter((run) => run.channel === channel).slice(-5)
    if (!live.length && !ended.length) return 'No subagent runs in this channel.'
    const lines: string[] = []
    for (const run of live) {
      const open = this.questions.of(run)
      lines.push(`${run.id} ${open.length ? 'parked' : 'running'} (by ${shownLine(run.starter, 32)}): ${run.task}`)
      for (const q of open.slice(0, 3)) lines.push(`  [${q.tag}] ${shownLine(q.question.text, 120)}`)
      if (open.length > 3) lines.push(`  … ${open.length - 3} more questions`)
    }
    for (const run of ended.reverse()) lines.push(`${run.id} ended ${run.outcome} (by ${shownLine(run.starter, 32)}): ${run.task}`)
    return chatText(lines.join('\n'))
  }

  /** The live delegation run ids under a chat run. */
  delegationsOf(chat: ChatRun): string[] {
    return [...this.runs].filter(([, entry]) => entry.chat === chat).map(([runId]) => runId)
  }

  /**
   * The plugin's dispose: every live run ends `cancelled (<why>)` as a cancel does (a run started here: its root agent is
   * disposed; a bound one: its live delegations are cancelled), its questions close with that note (the next load in the
   * same app still tells a late reply) and its end line is posted, not waited for; then everything is dropped.
   */
  clear(why: string): void {
    this.closed = true
    for (const chat of [...this.live.values()]) {
      chat.cancelled ??= why
      // Closed before the stop, whose cancel would end the questions' runs first with a note of their own.
      this.closeQuestions(chat, `cancelled (${chat.cancelled})`)
      try {
        chat.stop?.(why)
      } catch (error) {
        this.log(`stopping run ${chat.id} failed: ${shownLine(describeError(error), 300)}`)
      }
      try {
        this.end(chat, 'cancelled', '')
      } catch (error) {
        this.log(`ending run ${chat.id} failed: ${shownLine(describeError(error), 300)}`)
      }
    }
    this.live.clear()
    this.ended.length = 0
    this.agents.clear()
    this.runs.clear()
    this.runOfAgent.clear()
    this.questions.clear()
  }

  /**
   * The end line and final answer, at most `maxOutputLength` characters in all (a platform refuses a longer message);
   * a post that fails is told to the channel in a short line of its own (FINAL_NOT_POSTED).
   */
  private postEnd(chat: ChatRun, text: string): void {
    const session = chat.session
    const head = `Run ${chat.id} ended: ${chat.outcome}.`
    const message = shownWithin(text.trim() ? `${head}\n${text}` : head, this.config.maxOutputLength)
    const failed = (why: string) => {
      this.log(`[FINAL_NOT_POSTED] the end of run ${chat.id} could not be posted to ${shownLine(chat.channel, 64)} (${why}).`)
      session?.send(chatText(`Run ${chat.id} ended, but its answer could not be posted here (FINAL_NOT_POSTED).`)).catch(() => {})
    }
    session?.send(chatText(message)).then(
      (ids) => { if (ids?.length === 0) failed('the platform took no message') },
      (error) => failed(shownLine(describeError(error), 300)),
    )
  }

  private post(chat: ChatRun, text: string): void {
    chat.session?.send(chatText(text)).catch((error) => {
      const why = shownLine(describeError(error), 300)
      this.log(`[NOTICE_NOT_POSTED] a notice of run ${chat.id} could not be posted to ${shownLine(chat.channel, 64)} (${why}).`)
    })
  }
}
