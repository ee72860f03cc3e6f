import { z } from 'zod'
import { describeError, NAME_PATTERN, TELL_BOUNDS } from '@cordis-subagents/shared'
import type { Tool, ToolExecContext } from '@cordis-subagents/tools'
import { AgentError } from './errors.js'

// A child tells its parent something without stopping: a message into the parent's inbox, labelled with the child's handle id.

export interface TellParentOptions {
  /** The tool's name (default `tell_parent`). */
  name?: string
  /** Longest message, in characters (default `DEFAULT_TELL_LENGTH`, 2,000; at most `MAX_TELL_LENGTH`). */
  maxLength?: number
  /** Most messages one child sends over its life (default `DEFAULT_TELLS`, 20); a call past it is refused and the child goes on. */
  maxMessages?: number
}

export const DEFAULT_TELL_LENGTH: number = TELL_BOUNDS.maxLength
export const MAX_TELL_LENGTH: number = TELL_BOUNDS.maxLengthCeiling
export const DEFAULT_TELLS: number = TELL_BOUNDS.maxMessages
export const MAX_TELLS: number = TELL_BOUNDS.maxMessagesCeiling

/**
 * Where a served agent's messages go instead of a parent's inbox (serve-acp, serve-a2a: back over the protocol to the
 * parent elsewhere). It resolves once delivered and throws a refusal (`code` TELL_LIMIT, NO_PARENT, INBOX_FULL or another) when not.
 */
export type TellDelivery = (message: string, agent: object) => Promise<void> | void

/** Refusals that keep their code in the tool's answer (the parent's end gives them too). */
const REFUSALS = new Set(['TELL_LIMIT', 'NO_PARENT', 'INBOX_FULL'])

const DESCRIPTION = 'Tell whoever gave you this task something they should know now (a finding, a change of plan, a warning), '
  + 'while you keep working. It does not pause you and there is no reply; ask nothing here. Your final answer still goes in your last message.'

/** Anything an agent needs to tell its parent: its parent (with an inbox) and its handle id. */
interface Teller {
  parent?: { inbox: { post(content: string, delegation: undefined, from: string): unknown }; disposed: boolean }
  handleId: string
}

/** Checks `create({ tellParent })`; returns a problem or undefined. */
export function tellParentProblem(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'options.tellParent must be a boolean or { name?, maxLength?, maxMessages? }.'
  const { name, maxLength, maxMessages } = value as TellParentOptions
  if (name !== undefined && (typeof name !== 'string' || !NAME_PATTERN.test(name))) {
    return `options.tellParent.name ${JSON.stringify(name)} is not a tool name (1-64 of A-Z a-z 0-9 _ -).`
  }
  const bad = (n: unknown, max: number) => n !== undefined && !(Number.isSafeInteger(n) && (n as number) >= 1 && (n as number) <= max)
  if (bad(maxLength, MAX_TELL_LENGTH)) return `options.tellParent.maxLength must be an integer from 1 to ${MAX_TELL_LENGTH}, got ${String(maxLength)}.`
  if (bad(maxMessages, MAX_TELLS)) return `options.tellParent.maxMessages must be an integer from 1 to ${MAX_TELLS}, got ${String(maxMessages)}.`
  for (const key of Object.keys(value)) {
    if (!['name', 'maxLength', 'maxMessages'].includes(key)) return `options.tellParent has an unknown key "${key}"; it takes name, maxLength, maxMessages.`
  }
  return undefined
}

/**
 * The tool of one child (`create({ parent, tellParent })` gives it): each call posts the message to
 * the parent's inbox, labelled with the child's handle id, so the parent's model reads it before its
 * next step (or at its next turn). Bounded: `maxLength` characters a message, `maxMessages` a child.
 * Nothing parks: the result says whether it was delivered, and the child goes on either way.
 */
export function tellParentTool(
  options: boolean | TellParentOptions = {}, deliver?: TellDelivery,
): Tool<z.ZodObject<{ message: z.ZodString }>> {
  const problem = tellParentProblem(options)
  if (problem) throw new AgentError('INVALID_OPTIONS', problem)
  const { name = 'tell_parent', maxLength = DEFAULT_TELL_LENGTH, maxMessages = DEFAULT_TELLS } = typeof options === 'object' ? options : {}
  let sent = 0
  const input = z.object({ message: z.string().min(1).max(maxLength).describe(`What to tell them, at most ${maxLength} characters.`) })
  return {
    name,
    description: `${DESCRIPTION} At most ${maxMessages} messages.`,
    input,
    execute: async ({ message }, exec: ToolExecContext) => {
      if (deliver) {
        if (sent >= maxMessages) return limitReached(maxMessages)
        try {
          await deliver(message, exec.agent as object)
        } catch (error) {
          const code = (error as { code?: unknown }).code
          if (typeof code === 'string' && REFUSALS.has(code)) return { isError: true, content: `${code}: ${(error as Error).message}` }
          return { isError: true, content: `Not delivered (${describeError(error)}); put it in your final answer and go on.` }
        }
        sent++
        return { content: `Delivered to your parent (${sent} of ${maxMessages}). Go on with your task.` }
      }
      const teller = exec.agent as unknown as Teller | undefined
      const parent = teller?.parent
      if (!teller || !parent || parent.disposed) return { isError: true, content: 'NO_PARENT: there is no parent agent here to tell; put it in your final answer.' }
      if (sent >= maxMessages) return limitReached(maxMessages)
      try {
        parent.inbox.post(message, undefined, teller.handleId)
      } catch (error) {
        return { isError: true, content: `Not delivered (${describeError(error)}); put it in your final answer and go on.` }
      }
      sent++
      return { content: `Delivered to your parent (${sent} of ${maxMessages}). Go on with your task.` }
    },
  }
}

function limitReached(maxMessages: number) {
  return { isError: true, content: `TELL_LIMIT: you already sent ${maxMessages} messages; put the rest in your final answer and go on.` }
}
