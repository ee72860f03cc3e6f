import type { Agent } from '@cordis-subagents/agent'
import {
  type AbortScope, type DeadlineQueue, describeError, headChars, MAX_MESSAGE_LENGTH, quotedLines, type Usage, type WorkCounts,
} from '@cordis-subagents/shared'
import type {
  BackgroundMessage, BackgroundTask, SubagentHandle, SubagentService, SubagentUpdate, TurnEndPolicy,
} from '@cordis-subagents/subagents-service'
import type { ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import { runDelegation } from './call.js'
import type { DelegateOptions, DelegationInput, InFlight, ToolLoad } from './call-types.js'
import type { ControlVerbs, VerbNames } from './verb-names.js'

// A delegation in the background, as the model sees it: the start's reply, its progress, and how its
// result (exactly the synchronous tool result) reads when it comes back as a message or through a wait.
// The book that keeps the task (state, cancel, wait, exactly-once delivery) is `ctx.subagents.background`.

/** Longest progress line kept per delegation (characters). */
const MAX_PROGRESS_LENGTH = 200

/**
 * The abort of a background delegation's call: never (the task's cancel stops the run). A scope, so waiting on it
 * registers nothing; code that wants a signal gets one that never aborts.
 */
const NEVER_ABORTED: AbortScope = { aborted: false, reason: undefined, onAbort: () => noop, signal: new AbortController().signal }

type BackgroundOptions = DelegateOptions & { onTurnEnd: TurnEndPolicy; unreadResults?: 'report' | 'feed' }

/** The `execute` of a tool load in `mode: background`: each call starts one delegation in the background (`startInBackground`). */
export function delegateInBackground(
  options: BackgroundOptions, load: ToolLoad, verbs: ControlVerbs,
): (input: DelegationInput, exec: ToolExecContext) => ToolResult {
  return (input, exec) => load.unloaded
    ? { isError: true, content: 'Subagent not started: the subagent tool was unloaded.' }
    : startInBackground(load.subagents, options, input, exec, load.inFlight, load.deadlines, verbs, load.onParked)
}

/**
 * One call of a tool load in `mode: background`: records the delegation in the parent's background
 * book (`ctx.subagents.background`), starts it on the same path as a synchronous call, binds the
 * two, and returns at once with its handle. The result has exactly the synchronous format. `verbs`:
 * the app's control verbs (looked up once per tool load), which the start's reply names.
 */
function startInBackground(
  subagents: SubagentService,
  options: BackgroundOptions,
  input: DelegationInput,
  exec: ToolExecContext,
  inFlight: Set<InFlight>,
  deadlines: DeadlineQueue | undefined,
  verbs: ControlVerbs,
  onParked?: (run: SubagentHandle) => void,
): ToolResult {
  let task: BackgroundTask<ToolResult>
  try {
    task = subagents.background.start<ToolResult>({
      parent: exec.agent as Agent,
      label: input.description,
      provider: options.provider,
      onTurnEnd: options.onTurnEnd,
      turnSignal: exec.abortScope ?? exec.signal,
    })
  } catch (error) {
    const code = (error as { code?: string }).code
    return { isError: true, content: `Could not start the subagent in the background.\n\n${code ? `${code}: ` : ''}${(error as Error).message}` }
  }
  const reply: ToolResult = {
    content: startedText(task, options.onTurnEnd, taskVerbsSeenBy(exec.agent as Agent, verbs)),
    metadata: { background: true, handle: task.handle, provider: options.provider },
  }
  const onProgress = (update: SubagentUpdate) => recordProgress(task, update)
  // The task's cancel (a verb, the starting turn's abort, the parent's dispose) cancels the call as its parent would.
  let cancel: (reason: unknown) => void = noop
  const running = runDelegation(subagents, options, input, new DetachedExec(exec), inFlight, deadlines, {
    onCall: (call) => cancel = (reason) => call.cancel('parent', reason),
    onStarted: (run) => task.markStarted(run),
    onProgress,
    background: true,
    onParked,
  })
  task.bind((reason) => cancel(reason))
  // The result and its message together, in the tick it arrives: the book posts it or hands it to a wait.
  const feed = options.unreadResults === 'feed'
  const settle = (result: ToolResult) => task.settle(result, resultMessage(task, result, feed))
  running.then(settle, (error) => settle(failedResult(error)))
  return reply
}

const noop = () => {}

/**
 * What a background delegation's call runs with: the parent's context, with an abort that never comes. A class, not a
 * literal: V8 made that literal's objects old from birth (73 % of them in the bench), and a dead old object that names
 * the parent kept the parent, and all it names, through every young collection until a full one (bench/README).
 */
class DetachedExec implements ToolExecContext {
  readonly abortScope = NEVER_ABORTED
  readonly signal = NEVER_ABORTED.signal
  readonly agent: ToolExecContext['agent']
  readonly toolCallId: string
  constructor(exec: ToolExecContext) {
    this.agent = exec.agent
    this.toolCallId = exec.toolCallId
  }
}

/**
 * The four task verbs of the newest control load whose every one the caller can call: a child does not see
 * verbs that are not `nested` (nor verbs its tool filter hides), and must not be told to use them. The same
 * pick as `verbsSeenBy` (verb-names.ts), written out here so a background start does not enter that file.
 */
function taskVerbsSeenBy(agent: Agent, verbs: ControlVerbs): TaskVerbs | undefined {
  const tools = agent.tools as Agent['tools'] | undefined
  if (!tools) return undefined
  for (let index = verbs.sets.length - 1; index >= 0; index--) {
    const { wait, status, cancel, send } = verbs.sets[index]
    if (wait && status && cancel && send && tools.has(wait) && tools.has(status) && tools.has(cancel) && tools.has(send)) {
      return { wait, status, cancel, send }
    }
  }
  return undefined
}

type TaskVerbs = Pick<VerbNames, 'wait' | 'status' | 'cancel' | 'send'>

/** The task's progress from the run's updates: steps so far, and its last line (what the status verb shows). */
function recordProgress(task: BackgroundTask, update: SubagentUpdate): void {
  if (typeof update.step === 'number' && Number.isSafeInteger(update.step)) task.steps = Math.max(task.steps, update.step)
  else if (update.kind === 'step') task.steps++
  let line = typeof update.text === 'string' ? update.text.trim().split('\n', 1)[0] : ''
  if (!line && update.kind === 'tool-call' && typeof update.tool === 'string') line = `calls ${update.tool}`
  if (!line && update.kind === 'tool-result' && update.isError && typeof update.tool === 'string') line = `${update.tool} failed`
  if (line) task.lastProgress = line.length > MAX_PROGRESS_LENGTH ? headChars(line, MAX_PROGRESS_LENGTH - 1, '…') : line
}

/** What the model reads right after a background start: the handle, how the result comes back, what it can do meanwhile. */
function startedText(
  task: Pick<BackgroundTask, 'handle' | 'label'>,
  onTurnEnd: TurnEndPolicy,
  verbs: TaskVerbs | undefined,
): string {
  const lines = [
    `Started background subagent ${task.handle} (${JSON.stringify(task.label)}). It works on its own while you continue.`,
    verbs
      ? `Its result comes back exactly once: as the result of ${verbs.wait} if you wait for it, otherwise as a message marked [Background subagent ${task.handle} …] before one of your next steps.`
      : `Its result comes back as a message marked [Background subagent ${task.handle} …] before one of your next steps.`,
    onTurnEnd === 'wait'
      ? 'If you answer before it finishes, your turn waits for its result and you continue with it.'
      : 'If your turn ends before it finishes, its result arrives at the start of your next turn.',
  ]
  if (verbs) {
    lines.push(`Meanwhile: ${verbs.wait} { "handles": ["${task.handle}"] } collects it, ${verbs.status} shows progress, `
      + `${verbs.send} { "handle": "${task.handle}", "message": "…" } steers it, ${verbs.cancel} { "handle": "${task.handle}" } stops it.`)
  }
  return lines.join('\n')
}

/** The result of a background task this package started (the book keeps it as it was given). */
export function resultOf(task: BackgroundTask): ToolResult | undefined {
  return task.result as ToolResult | undefined
}

/** The header of a background result; it says who the result is from and how it ended. */
export function resultHeader(task: BackgroundTask, result = resultOf(task)): string {
  const ended = task.cancelledBecause ? `was cancelled (${task.cancelledBecause})` : endedAs(result)
  return `[Background subagent ${task.handle} ${JSON.stringify(task.label)} ${ended}]`
}

/** How a result ended, in words: a typed one says so, and so does one whose answer failed its schema. */
export function endedAs(result: ToolResult | undefined): string {
  const stopReason = (result?.metadata as { stopReason?: unknown } | undefined)?.stopReason
  if (result?.isError) return stopReason === 'invalid_output' ? 'ended with an error (invalid_output)' : 'ended with an error'
  return stopReason === 'pending' ? 'asks a question' : result?.structured !== undefined ? 'finished with a typed result' : 'finished'
}

/**
 * The inbox message of `result` if no wait collects it, cut to fit one message, with the usage and work it
 * carries. It reaches the inbox without a sender (no `[from …]` item quotes it), so its body is quoted here.
 */
function resultMessage(task: BackgroundTask, result: ToolResult, feed: boolean): BackgroundMessage {
  const header = resultHeader(task, result)
  const room = MAX_MESSAGE_LENGTH - header.length - 200
  const message = new ResultMessage(`${header}\n\n${quotedLines(result.content, room)}`, result.usage, result.work)
  // A typed result's value (its JSON, at most 64 KiB, is the body, never cut): as a sync result carries it.
  if (result.structured !== undefined) message.structured = result.structured
  // `unreadResults: feed`: a turn about to end on its answer with this unread takes one more step (the agent's `Inbox.feedsOnce`).
  if (feed) message.feed = true
  return message
}

/** A class, not a literal: V8 made that literal's objects old from birth (97 % in the bench), each keeping its text past its end. */
class ResultMessage implements BackgroundMessage {
  declare structured?: unknown
  declare feed?: true
  constructor(readonly text: string, readonly usage: Usage | undefined, readonly work: WorkCounts | undefined) {}
}

/** The result of a delegation whose promise broke its never-rejects contract. */
function failedResult(error: unknown): ToolResult {
  return { isError: true, content: `Subagent failed: ${describeError(error)}` }
}
