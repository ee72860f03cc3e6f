// A parent's end of `tell_parent` across a served host (provider-acp, provider-a2a): the child's message goes into the
// delegating agent's inbox, labelled with the child's handle, under the bounds the parent offered. The child is
// untrusted: a message it was never offered the tool for is dropped, and the bounds are the parent's, not the child's.

import { stripControl } from '../security/peer-text.js'
import { isRecord } from '../vocabulary/records.js'
import { CROSSING_KEY } from './crossing.js'
import type { TellBounds } from './aids.js'

/** The refusals a told message gets (the same as the in-process `tell_parent` tool's). */
export type TellRefusalCode = 'TELL_LIMIT' | 'NO_PARENT' | 'INBOX_FULL' | 'TELL_REFUSED'

export interface TellRefusal {
  code: TellRefusalCode
  message: string
}

/** The parent a told message is for: an agent with an inbox (structurally; shared knows no agent). */
interface TellTarget {
  inbox?: { post(content: string, delegation: undefined, from: string): unknown }
  disposed?: boolean
}

/** One child's messages to its parent: at most `maxMessages`, each at most `maxLength` characters. */
export class ToldRelay {
  private sent = 0

  /** `bounds`: what the parent offered (undefined: it offered no tool, so every message is refused). */
  constructor(private readonly parent: unknown, private readonly from: string, private readonly bounds: TellBounds | undefined) {}

  /** Posts `message` to the parent's inbox; returns how many were delivered, or why not. */
  deliver(message: unknown): { sent: number; of: number } | TellRefusal {
    const { bounds } = this
    if (!bounds) return { code: 'TELL_REFUSED', message: 'this parent did not offer tell_parent to this task' }
    if (typeof message !== 'string' || !message.trim()) return { code: 'TELL_REFUSED', message: 'a told message is a non-empty string' }
    if (message.length > bounds.maxLength) return { code: 'TELL_REFUSED', message: `a told message is at most ${bounds.maxLength} characters` }
    const parent = this.parent as TellTarget | undefined
    if (!parent?.inbox || parent.disposed) return { code: 'NO_PARENT', message: 'there is no parent agent here to tell; put it in your final answer' }
    if (this.sent >= bounds.maxMessages) {
      return { code: 'TELL_LIMIT', message: `you already sent ${bounds.maxMessages} messages; put the rest in your final answer and go on` }
    }
    try {
      parent.inbox.post(stripControl(message), undefined, this.from)
    } catch (error) {
      const code = (error as { code?: unknown }).code === 'INBOX_FULL' ? 'INBOX_FULL' : 'NO_PARENT'
      return { code, message: `not delivered (${(error as Error).message}); put it in your final answer and go on` }
    }
    this.sent++
    return { sent: this.sent, of: bounds.maxMessages }
  }
}

/** An A2A status update's message part that carries a told message (a data part `{ cordisSubagents: { told } }`). */
export function toldData(message: string): Record<string, unknown> {
  return { [CROSSING_KEY]: { told: message } }
}

/** The told message of a data part's value, or undefined when it is not one of ours. */
export function toldFrom(data: unknown): string | undefined {
  const ours = isRecord(data) ? data[CROSSING_KEY] : undefined
  const told = isRecord(ours) ? ours.told : undefined
  return typeof told === 'string' ? told : undefined
}

/** The handle a remote child's messages are labelled with: the delegating agent's handle id, the child's name and its run id. */
export function remoteHandle(parent: unknown, name: string, runId: string): string {
  const id = (parent as { handleId?: unknown } | undefined)?.handleId
  return `${typeof id === 'string' ? id : 'parent'}/${name}.${runId}`
}
