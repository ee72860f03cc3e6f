// How the CLI shows a question that reached the root (the run ended `pending`).
import type { PendingQuestion } from '@cordis-subagents/shared'
import { terminalLine } from './terminal-text.js'

/** The lines that print a pending question: who asks (the run path), what, and the choices offered. */
export function questionLines(question: PendingQuestion, interactive: boolean): string[] {
  const from = question.path.length ? `subagent ${question.path.join(' → ')}` : 'the main agent'
  const lines = [`question from ${terminalLine(from)} (${question.kind}):`, question.text]
  if (question.options?.length) lines.push(`choices: ${question.options.map((option) => terminalLine(option.name)).join(' / ')}`)
  lines.push(interactive ? 'your answer (the next line you type goes to it):' : 'Run with --interactive to answer it; without an answer this run ends here.')
  return lines
}
