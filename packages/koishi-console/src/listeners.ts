import type { Context } from 'koishi'
import type { Events } from '@koishijs/plugin-console'
import { answerRun, cancelRun, ConsoleError, MAX_PAGE, sendToRun, transcriptOf, type TranscriptPage } from '@cordis-subagents/console'
import type { Config } from './config.js'
import { clean, type DelegationView } from './view.js'

/** What an action answers the page: done, or a refusal with the standalone console's stable code. */
export type ActionReply<T = boolean> = { ok: T } | { error: { code: string; message: string } }

declare module '@koishijs/plugin-console' {
  interface Events {
    'subagents/transcript'(runId: string, offset?: number, limit?: number): ActionReply<TranscriptPage>
    'subagents/cancel'(runId: string): ActionReply
    'subagents/answer'(runId: string, answer: string): ActionReply
    'subagents/send'(runId: string, message: string): ActionReply
  }
}

const RUN_ID = /^[A-Za-z0-9_.:-]{1,200}$/

/**
 * The page's requests over the console's own WebSocket. Reading a transcript needs `viewAuthority`;
 * cancel, answer and send need `actAuthority` (Koishi's console refuses a user below it with
 * `unauthorized` before the call reaches here, when @koishijs/plugin-auth is loaded).
 */
export function addListeners(ctx: Context, view: DelegationView, config: Config): void {
  const console = ctx.console
  const log = (error: unknown) => ctx.logger('subagents-console').warn('an answer from the console could not resume its run: %s', error)
  const listen = <K extends keyof ActionEvents>(event: K, callback: Events[K], authority: number) => {
    console.addListener(event, callback, { authority })
    // The console keeps listeners until they are replaced; this plugin's go with it. The entry the console stored is
    // what we compare, not the callback: cordis hands a service method a Proxy of a function argument, so the stored
    // callback is never ours. A newer load's entry (it replaced ours) stays when this load unloads after it.
    const entry = console.listeners[event]
    ctx.on('dispose', () => {
      if (console.listeners[event] === entry) delete console.listeners[event]
    })
  }
  listen('subagents/transcript', (runId, offset = 0, limit = 50) => reply(() => {
    if (!isInteger(offset, 0, Number.MAX_SAFE_INTEGER) || !isInteger(limit, 1, MAX_PAGE)) {
      throw new ConsoleError('INVALID_REQUEST', `Expected an offset of 0 or more and a limit from 1 to ${MAX_PAGE}.`)
    }
    return clean(transcriptOf(view.host, checkedRunId(runId), offset, limit))
  }), config.viewAuthority)
  listen('subagents/cancel', (runId) => reply(() => {
    cancelRun(view.host, checkedRunId(runId))
    return true
  }), config.actAuthority)
  listen('subagents/answer', (runId, answer) => reply(() => {
    answerRun(view.host, checkedRunId(runId), answer, log)
    return true
  }), config.actAuthority)
  listen('subagents/send', (runId, message) => reply(() => {
    sendToRun(view.host, checkedRunId(runId), message)
    return true
  }), config.actAuthority)
}

type ActionEvents = Pick<Events, 'subagents/transcript' | 'subagents/cancel' | 'subagents/answer' | 'subagents/send'>

function reply<T>(act: () => T): ActionReply<T> {
  try {
    return { ok: act() }
  } catch (error) {
    if (error instanceof ConsoleError) return { error: { code: error.code, message: error.message } }
    throw error
  }
}

function checkedRunId(runId: unknown): string {
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) throw new ConsoleError('INVALID_REQUEST', 'Expected a run id (up to 200 letters, digits and . _ : -).')
  return runId
}

function isInteger(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max
}
