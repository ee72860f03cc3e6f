import { AgentError } from './errors.js'
import type { Budget } from './budget.js'

// A budget the model can see: a short note after the agent's system prompt, rebuilt for every model call.

/** `create({ budgetNote })`: when the note tells the model to wrap up. */
export interface BudgetNoteOptions {
  /**
   * The share of a limit left (0–1) at or below which the note tells the model to wrap up (default
   * `DEFAULT_WRAP_UP_AT`, 0.2). The last step of the turn is always a wrap-up step.
   */
  wrapUpAt?: number
}

/** Default `wrapUpAt`: 20 % or less of a limit left. */
export const DEFAULT_WRAP_UP_AT = 0.2

/** What the note says when a limit is near: the model finishes rather than starts new work. */
export const WRAP_UP_HINT = 'You are near this limit: wrap up now. Give your final answer from what you have; start no new work.'

/**
 * Agents that see their budget, and their wrap-up share (set once at create; an agent never loses it).
 * A turn asks `has` first, so an agent without the note never enters this file.
 */
export const budgetNoted = new WeakMap<object, number>()

/** Checks `create({ budgetNote })`; returns a problem or undefined. */
export function budgetNoteProblem(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'options.budgetNote must be a boolean or { wrapUpAt? }.'
  const { wrapUpAt } = value as BudgetNoteOptions
  if (wrapUpAt !== undefined && !(typeof wrapUpAt === 'number' && wrapUpAt >= 0 && wrapUpAt <= 1)) {
    return `options.budgetNote.wrapUpAt must be a number from 0 to 1, got ${String(wrapUpAt)}.`
  }
  for (const key of Object.keys(value)) {
    if (key !== 'wrapUpAt') return `options.budgetNote has an unknown key "${key}"; it takes wrapUpAt.`
  }
  return undefined
}

/** Turns the note on for `agent` (what `create({ budgetNote })` does). */
export function noteBudget(agent: object, options: boolean | BudgetNoteOptions | undefined): void {
  if (!options) return
  const problem = budgetNoteProblem(options)
  if (problem) throw new AgentError('INVALID_OPTIONS', problem)
  budgetNoted.set(agent, options === true ? DEFAULT_WRAP_UP_AT : options.wrapUpAt ?? DEFAULT_WRAP_UP_AT)
}

/** What a turn needs to word the note: the agent and its step limit. */
export interface NotedAgent {
  persona?: string
  maxSteps: number
}

/**
 * The system prompt of model call `step` (already charged to `budget`): the agent's persona, plus
 * the budget note when the agent has one. The note lives only in this request, never in the
 * transcript, so there is one current note and the parent never reads it.
 */
export function systemWithBudget(agent: NotedAgent, budget: Budget, step: number): string | undefined {
  const wrapUpAt = budgetNoted.get(agent)
  if (wrapUpAt === undefined) return agent.persona
  const note = budgetNote(agent.maxSteps, budget, step, wrapUpAt)
  return agent.persona ? `${agent.persona}\n\n${note}` : note
}

const number = (value: number) => Math.floor(value).toLocaleString('en-US')

/** The note's text: every limit that applies, what is left of it, and a wrap-up hint when one is near its end. */
export function budgetNote(maxSteps: number, budget: Budget, step: number, wrapUpAt = DEFAULT_WRAP_UP_AT, now = performance.now()): string {
  const left = budget.remaining(now)
  const { limits } = budget
  const parts: string[] = []
  let near = false
  const share = (rest: number, of: number) => {
    if (of > 0 && of !== Infinity && rest <= of * wrapUpAt) near = true
  }
  // Steps: this call included, the tighter of the turn's step limit and the tree's step budget.
  const turnLeft = maxSteps - step + 1
  const stepsLeft = Math.min(turnLeft, left.maxSteps + 1)
  parts.push(`${number(stepsLeft)} model step${stepsLeft === 1 ? '' : 's'} (this one included)`)
  if (stepsLeft <= 1) near = true
  share(turnLeft, maxSteps)
  if (limits.maxSteps !== Infinity) share(left.maxSteps + 1, limits.maxSteps)
  if (left.maxToolCalls !== Infinity) {
    parts.push(`${number(left.maxToolCalls)} tool call${left.maxToolCalls === 1 ? '' : 's'}`)
    share(left.maxToolCalls, limits.maxToolCalls)
  }
  if (left.maxTokens !== Infinity) {
    parts.push(`${number(left.maxTokens)} tokens`)
    share(left.maxTokens, limits.maxTokens)
  }
  if (left.maxWallMs !== Infinity) {
    parts.push(`${number(left.maxWallMs / 1000)} s of time`)
    share(left.maxWallMs, limits.maxWallMs)
  }
  const text = `[Budget] Left for this task: ${parts.join(', ')}. The limits are hard: past one, the task stops without your answer.`
  return near ? `${text}\n${WRAP_UP_HINT}` : text
}
