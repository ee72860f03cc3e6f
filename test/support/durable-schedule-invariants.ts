// The invariants of test/durable-schedules.slow.spec.ts, checked on the append-only log of a schedule
// (model calls, starts, ends and durable settles of every host process in order) and on what a
// restarted host reads from its store. Each returns the violations it found, as sentences.
import type { LogEntry } from './durable-schedule-model.js'

type End = Extract<LogEntry, { k: 'end' }>
/** Outcomes after which a run never runs again (`interrupted` and `pending` are not final). */
const FINAL = new Set(['completed', 'aborted', 'error', 'max-tokens', 'refusal', 'max-steps', 'timeout', 'budget', 'closed'])

/**
 * Log invariants: a settled run never starts again and makes no model call; a completed task's child never runs again
 * (a reattach replays its result); a restored child keeps its task; each question is answered at most once.
 */
export function checkLog(log: LogEntry[]): string[] {
  const violations: string[] = []
  const ended = new Map<string, End>()
  const latest = new Map<string, string>()
  const completedTask = new Map<string, string>()
  const answers = new Map<string, Set<string>>()
  // A clean stop disposes the host's parked and running runs: those ends are the stop's, not settles
  // (a parked run stays parked in the store).
  const stopping = new Set<number>()
  log.forEach((entry, i) => {
    if (entry.k === 'stopping') stopping.add(entry.pid)
    if (entry.k === 'end' && stopping.has(entry.pid)) return
    if (entry.k === 'start') {
      if (ended.has(entry.runId)) violations.push(`settled run ${entry.runId} (${entry.task}, ${ended.get(entry.runId)!.stopReason}) started again`)
      latest.set(entry.task, entry.runId)
    }
    if (entry.k === 'end' && FINAL.has(entry.stopReason)) {
      ended.set(entry.runId, entry)
      if (entry.stopReason === 'completed') completedTask.set(entry.task, entry.runId)
    }
    if (entry.k !== 'call' || entry.who.startsWith('R')) return
    if (entry.who === '?') {
      violations.push(`a restored child lost its transcript: its model saw only ${JSON.stringify(entry.last)}`)
      return
    }
    const seen = answers.get(entry.who) ?? new Set()
    for (const answer of entry.answers) seen.add(answer)
    answers.set(entry.who, seen)
    if (seen.size > 1) violations.push(`the question of ${entry.who} was answered more than once: ${[...seen].join(', ')}`)
    // A reattach of a completed task gives its recorded result (a replay: a start, no model call); a model call is a second child.
    const done = completedTask.get(entry.who)
    if (done) {
      violations.push(`task ${entry.who} completed as ${done} and its child ran again (a model call)`)
      return
    }
    const run = latest.get(entry.who)
    if (!run || !ended.has(run)) return
    // A fresh child's first call comes before its start line: a start of another run of the task later makes it legitimate.
    const fresh = log.slice(i + 1).some((later) => later.k === 'start' && later.task === entry.who && later.runId !== run)
    if (!fresh) violations.push(`model call for ${entry.who} after its run ${run} settled (${ended.get(run)!.stopReason})`)
  })
  return [...new Set(violations)]
}

export interface StoreView {
  records: { id: string; label: string; state: string; stopReason?: string; result?: string }[]
  questions: string[]
  pending: string[]
}

/**
 * After a restart (`log` up to `before`; `since` where the stopped host's generation began): every
 * run that ended under that host before a clean stop, or whose settle the host acknowledged
 * (`durable`) before a SIGKILL, is recorded ended with its result; a run that ended without the
 * acknowledgement before a SIGKILL may come back `interrupted` (its settle was the write in flight).
 * `pending()` equals the stored pending questions, none of them of an ended run, and every run the
 * harness left parked and unanswered is among them (after a SIGKILL: those whose park the host
 * acknowledged, i.e. read its question back from the store).
 */
export function checkRestart(log: LogEntry[], since: number, before: number, how: 'stop' | 'kill', store: StoreView, parked: string[]): string[] {
  const violations: string[] = []
  const records = new Map(store.records.map((record) => [record.id, record]))
  const acknowledged = (what: 'settled' | 'parked') =>
    new Set(log.slice(0, before).flatMap((entry) => entry.k === 'durable' && entry.what === what ? [entry.runId] : []))
  const durable = acknowledged('settled')
  const parkAcknowledged = acknowledged('parked')
  const ends = new Map<string, End>()
  const stopping = new Set<number>()
  for (const entry of log.slice(0, before)) {
    if (entry.k === 'stopping') stopping.add(entry.pid)
    // Ends the clean stop itself caused (it disposes parked and running runs) are not settles before it.
    else if (entry.k === 'end' && FINAL.has(entry.stopReason) && !stopping.has(entry.pid)) ends.set(entry.runId, entry)
  }
  // Runs that ended under the host just stopped or killed; earlier ones were checked at their restart.
  const mine = new Set(log.slice(since, before).flatMap((entry) => entry.k === 'end' ? [entry.runId] : []))
  for (const [runId, end] of ends) {
    if (!mine.has(runId)) continue
    const record = records.get(runId)
    const must = how === 'stop' || durable.has(runId)
    const what = `${end.task}'s run ${runId} ended ${end.stopReason} before the ${how === 'stop' ? 'clean stop' : 'SIGKILL'}`
    if (!record) {
      violations.push(`${what}${must && how === 'kill' ? ' (acknowledged)' : ''} and has no record`)
      continue
    }
    const ok = record.state === 'settled' || record.state === 'closed' || (!must && record.state === 'interrupted')
    if (!ok) violations.push(`${what}${must && how === 'kill' ? ' (acknowledged)' : ''} but its record is ${record.state}`)
    else if (record.state !== 'interrupted' && end.output && record.result !== end.output) {
      violations.push(`${what} with ${JSON.stringify(end.output)} but its record holds ${JSON.stringify(record.result)}`)
    }
  }
  const pending = [...store.pending].sort()
  const questions = [...store.questions].sort()
  if (pending.join() !== questions.join()) violations.push(`pending() lists ${pending.join(', ') || 'nothing'}, the store's questions are ${questions.join(', ') || 'none'}`)
  for (const runId of questions) if (ends.has(runId)) violations.push(`run ${runId} ended ${ends.get(runId)!.stopReason} but its question is still pending`)
  for (const runId of parked) {
    if (ends.has(runId) || pending.includes(runId) || (how === 'kill' && !parkAcknowledged.has(runId))) continue
    violations.push(`run ${runId} was parked unanswered${how === 'kill' ? ' (acknowledged)' : ''} at the ${how} but pending() does not list it`)
  }
  return violations
}

/** The outcome of the latest final end of `task`'s runs, if any. */
export function lastEnd(log: LogEntry[], task: string): End | undefined {
  return log.findLast((entry): entry is End => entry.k === 'end' && entry.task === task && FINAL.has(entry.stopReason))
}
