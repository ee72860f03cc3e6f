import type { Agent } from '@cordis-subagents/agent'
import type { ParentBackground, SubagentService } from '@cordis-subagents/subagents-service'
import type { Tool, ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import type { VerbOptions } from './options.js'
import { type AbortScope, MAX_MESSAGE_LENGTH, onAbort } from '@cordis-subagents/shared'
import { z } from 'zod'
import { BACKGROUND_HANDLE, failed, seconds, statusLine, waitResult } from './format.js'
import { buildReply } from './reply.js'
import { buildResult } from './result-verb.js'
import { buildContinue } from './continue.js'


/** Most handles one call names. */
const MAX_HANDLES = 64
const HANDLE = z.string().regex(BACKGROUND_HANDLE, 'A handle looks like "bg-1" (as the start call returned it).')

/** The four tools; each acts only on the calling agent's own background children. */
export function buildVerbs(subagents: SubagentService, options: VerbOptions): Tool<any>[] {
  const { names } = options
  const book = (exec: ToolExecContext): ParentBackground | undefined => subagents.background.peek(exec.agent as Agent)
  const none: ToolResult = { content: 'You have no background subagents. Start one with a background subagent tool first.', isError: true }
  const maxSeconds = Math.max(1, Math.floor(options.maxWaitTimeout / 1000))

  const wait: Tool<any> = {
    name: names.wait,
    description: [
      'Wait for background subagents you started and collect their results (each result is given to you exactly once).',
      'mode "any" returns as soon as one of them finishes; "all" (default) when all have.',
      'Omit handles to wait for all of yours still running.',
      `It returns after timeoutSeconds at the latest (default ${seconds(options.waitTimeout)}, at most ${maxSeconds} s) with whatever finished and what still runs.`,
    ].join(' '),
    input: z.strictObject({
      handles: z.array(HANDLE).min(1).max(MAX_HANDLES).optional().describe('Handles to wait for (e.g. ["bg-1", "bg-2"]). Default: all of yours still running.'),
      mode: z.enum(['any', 'all']).optional().describe('"any": return at the first result; "all" (default): wait for every handle.'),
      timeoutSeconds: z.number().int().min(1).max(maxSeconds).optional().describe(`Longest wait in seconds (default ${Math.round(options.waitTimeout / 1000)}, at most ${maxSeconds}).`),
    }),
    execute: async (input, exec) => {
      const parent = book(exec)
      if (!parent) return none
      const timeoutMs = input.timeoutSeconds ? input.timeoutSeconds * 1000 : options.waitTimeout
      try {
        return waitResult(await parent.wait(input.handles, input.mode ?? 'all', timeoutMs, exec.abortScope ?? exec.signal), timeoutMs, undefined, names.result)
      } catch (error) {
        return failed(error)
      }
    },
  }

  const status: Tool<any> = {
    name: names.status,
    description: 'Show your background subagents: state, time so far, steps, their last progress line, and where each finished one\'s result went. It does not collect results.',
    input: z.strictObject({
      handles: z.array(HANDLE).min(1).max(MAX_HANDLES).optional().describe('Only these handles. Default: all of yours.'),
    }),
    execute: (input, exec) => {
      const parent = book(exec)
      if (!parent) return none
      try {
        const tasks = input.handles ? input.handles.map((handle: string) => parent.get(handle)) : parent.list()
        if (!tasks.length) return { content: 'You have no background subagents.' }
        return { content: tasks.map(statusLine).join('\n') }
      } catch (error) {
        return failed(error)
      }
    },
  }

  const cancel: Tool<any> = {
    name: names.cancel,
    description: 'Stop one of your background subagents. Returns what it produced so far (as its result) when it stops in time; otherwise that result is delivered later.',
    input: z.strictObject({ handle: HANDLE.describe('The handle to stop (e.g. "bg-1").') }),
    execute: async (input, exec) => {
      const parent = book(exec)
      if (!parent) return none
      try {
        const task = parent.get(input.handle)
        if (!task.live) {
          const report = await parent.wait([task.handle], 'all', 0, exec.abortScope ?? exec.signal)
          return waitResult(report, 0, `${task.handle} had already ended; nothing to cancel.`, names.result)
        }
        task.cancel(`you cancelled it with ${names.cancel}`)
        const report = await parent.wait([task.handle], 'all', options.cancelGrace, exec.abortScope ?? exec.signal)
        if (report.collected.length) return { ...waitResult(report, options.cancelGrace, `Cancelled ${task.handle}.`), isError: false }
        // Claimed by a wait already in progress (this call's wait returned at once): that one returns its result.
        if (!report.timedOut && !report.aborted && task.waiter) {
          return { content: `Cancel requested for ${task.handle}; another ${names.wait} call is already waiting for it and will return its result.` }
        }
        return { content: `Cancel requested for ${task.handle}; it has not stopped within ${seconds(options.cancelGrace)}. Its last result will be delivered to you later (as a message, or through ${names.wait}).` }
      } catch (error) {
        return failed(error)
      }
    },
  }

  const send: Tool<any> = {
    name: names.send,
    description: 'Send a follow-up message to one of your background subagents while it works (for example a correction or a new detail). It reads it at its next step. Not every provider can take one; the result says so.',
    input: z.strictObject({
      handle: HANDLE.describe('The handle to steer (e.g. "bg-1").'),
      message: z.string().min(1).max(MAX_MESSAGE_LENGTH).refine((text) => text.trim().length > 0, 'The message must not be only whitespace.').describe('What to tell the subagent.'),
    }),
    execute: async (input, exec) => {
      const parent = book(exec)
      if (!parent) return none
      try {
        const task = parent.get(input.handle)
        // A child still starting (queued for a slot, or its provider is setting up) is waited for, briefly.
        if (task.live && !task.run) await within(task.started(), options.startWait, exec.abortScope ?? exec.signal)
        if (!task.live) return { isError: true, content: `${task.handle} has already ended, so it cannot take a message. Collect its result (${names.wait}), then start a new delegation to continue.` }
        if (!task.run) return { isError: true, content: `${task.handle} is still starting (waiting for a slot or its provider) after ${seconds(options.startWait)}; send the message later.` }
        task.run.send(input.message)
        return { content: `Sent to ${task.handle}. It reads the message at its next step; its result still comes back once, as before.` }
      } catch (error) {
        return failed(error)
      }
    },
  }

  return [wait, status, cancel, send, buildReply(subagents, options), buildResult(subagents, options), buildContinue(subagents, options)]
}

/** Waits for `promise`, at most `ms` or until `signal` aborts (never rejects). */
async function within(promise: Promise<void>, ms: number, signal: AbortSignal | AbortScope): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopWaiting = noop
  await Promise.race([
    promise,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms)
      stopWaiting = onAbort(signal, resolve)
    }),
  ])
  clearTimeout(timer)
  stopWaiting()
}

const noop = () => {}

