import type { BackgroundTask, WaitReport } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import { addUsage, describeError, emptyUsage, quotedLines, type Usage, type WorkCounts } from '@cordis-subagents/shared'
import { endedAs, resultHeader, resultOf } from '../background.js'

/** One task as a status line: handle, label, state, elapsed, steps, last progress, where its result went. */
export function statusLine(task: BackgroundTask): string {
  const head = `${task.handle} ${JSON.stringify(task.label)} (${task.provider})`
  const elapsed = seconds(task.elapsedMs)
  if (task.live) {
    const state = task.state === 'starting' ? 'starting (waiting for a slot or its provider)' : 'running'
    const progress = task.lastProgress ? `; last: ${JSON.stringify(task.lastProgress)}` : ''
    const cancelling = task.cancelledBecause ? `; cancelling (${task.cancelledBecause})` : ''
    return `- ${head}: ${state}, ${elapsed}, ${task.steps} step${task.steps === 1 ? '' : 's'}${progress}${cancelling}`
  }
  const how = task.cancelledBecause ? 'cancelled' : endedAs(resultOf(task))
  return `- ${head}: ${how} after ${elapsed}, ${task.steps} step${task.steps === 1 ? '' : 's'}; ${whereDelivered(task)}`
}

/** Where an ended task's result went, in words. */
function whereDelivered(task: BackgroundTask): string {
  switch (task.delivery?.via) {
    case 'wait': return 'its result was returned by an earlier wait or cancel call'
    case 'message': return 'its result was delivered to you as a message marked [Background subagent …]'
    case 'lost': return `its result was lost: ${task.delivery.reason}`
    default: return 'its result is being delivered'
  }
}

/**
 * A wait's (or a cancel's) tool result: the results it collects in the synchronous format, then
 * what else it knows. A result delivered before is not repeated; `readVerb` (subagent_result) reads it again.
 * Each collected result is quoted line by line under its header (`quotedLines`): only our headers and
 * separators start a line, so a child's output cannot forge another child's result.
 */
export function waitResult(report: WaitReport, timeoutMs: number, lead?: string, readVerb?: string): ToolResult {
  const parts: string[] = lead ? [lead] : []
  for (const task of report.collected) parts.push(`${resultHeader(task)}\n\n${quotedLines(resultOf(task)!.content)}`)
  for (const task of report.delivered) {
    const again = readVerb && task.run ? ` (${readVerb} { "handle": "${task.handle}" } reads it again)` : ''
    parts.push(`${task.handle} ${JSON.stringify(task.label)}: ${whereDelivered(task)}; it is not repeated here${again}.`)
  }
  if (report.running.length) {
    const why = report.aborted ? 'The wait was cancelled (your turn was aborted).'
      : report.timedOut ? `Nothing more ended within ${seconds(timeoutMs)}.`
        : ''
    parts.push([why, 'Still running:', ...report.running.map(statusLine)].filter(Boolean).join('\n'))
  }
  if (!parts.length) parts.push('You have no background subagents running and none of the handles you named has a result left to collect.')
  const result: ToolResult = { content: parts.join('\n\n---\n\n') }
  if (report.collected.length && report.collected.every((task) => resultOf(task)!.isError)) result.isError = true
  const rolled = rollUp(report.collected)
  if (rolled.usage) result.usage = rolled.usage
  if (rolled.work) result.work = rolled.work
  // Typed results' values by handle (each one's JSON is in its text), as a sync result carries its value.
  const typed = report.collected.filter((task) => resultOf(task)!.structured !== undefined)
  if (typed.length) result.structured = Object.fromEntries(typed.map((task) => [task.handle, resultOf(task)!.structured]))
  result.metadata = {
    collected: report.collected.map((task) => {
      const { isError, metadata, structured } = resultOf(task)!
      return structured === undefined
        ? { handle: task.handle, isError: !!isError, metadata }
        : { handle: task.handle, isError: !!isError, metadata, structured }
    }),
    running: report.running.map((task) => task.handle),
    timedOut: report.timedOut,
  }
  return result
}

/**
 * The usage and work of the collected results, for the agent's roll-up. The agent counts one
 * delegation per tool result with work; a wait collecting k results reports the other k - 1 in
 * its work's `delegations`, so the parent's total delegations stay exact.
 */
function rollUp(tasks: BackgroundTask[]): { usage?: Usage; work?: WorkCounts } {
  let usage: Usage | undefined
  let work: WorkCounts | undefined
  for (const task of tasks) {
    const result = resultOf(task)!
    if (result.usage) usage = addUsage(usage ?? emptyUsage(), result.usage)
    const counts = result.work ?? { steps: 0, toolCalls: 0, delegations: 0 }
    work = !work ? { ...counts } : {
      steps: work.steps + counts.steps,
      toolCalls: work.toolCalls + counts.toolCalls,
      delegations: work.delegations + counts.delegations + 1,
    }
  }
  return { usage, work }
}

export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`
}

/** A background handle as the start call returns it (`bg-1`): bounded digits, no backtracking. */
export const BACKGROUND_HANDLE = /^bg-[1-9][0-9]{0,8}$/

/** A refusal as a tool result: the error's code, then its message. */
export function failed(error: unknown): ToolResult {
  const code = (error as { code?: string })?.code
  return { isError: true, content: `${code ? `${code}: ` : ''}${describeError(error)}` }
}
