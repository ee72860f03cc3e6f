import type { Attributes } from '@opentelemetry/api'
import { headChars, peerLine } from '@cordis-subagents/shared'

/** Longest name or id a span carries (tool names and call ids come from the model). */
const MAX_NAME_LENGTH = 256
/** Most of a name that is scanned: a longer one is cut anyway. */
const MAX_NAME_SCAN = MAX_NAME_LENGTH * 4

/**
 * A name or id from outside (a tool name, a call id, an agent label, a provider name, an error
 * class), cleaned with shared's `peerLine` (escape sequences, control, bidi and hiding characters
 * removed; newlines and tabs become spaces) and bounded: a hostile model must not put a megabyte
 * or a terminal escape in a span name. Only a bounded head is scanned, and no cut splits a
 * surrogate pair.
 */
export function bounded(value: string): string {
  const clean = peerLine(headChars(value, MAX_NAME_SCAN))
  return clean.length <= MAX_NAME_LENGTH && value.length <= MAX_NAME_SCAN ? clean : `${headChars(clean, MAX_NAME_LENGTH)}…`
}

/** What a span may record of prompts, output and tool data: nothing unless `captureContent` is on. */
export class ContentPolicy {
  constructor(readonly capture: boolean, private readonly maxLength: number) {}

  /** `text` cut to the configured length, never inside a surrogate pair (a marker says how much was cut). */
  cut(text: string): string {
    if (text.length <= this.maxLength) return text
    const head = headChars(text, this.maxLength)
    return `${head}… [${text.length - head.length} more characters]`
  }

  /** A value as JSON, cut; values that cannot be serialised are named, not thrown. */
  json(value: unknown): string {
    let text: string | undefined
    try {
      text = JSON.stringify(value)
    } catch {
      text = undefined
    }
    return this.cut(text ?? String(typeof value))
  }

  /** GenAI-convention messages of one role with one text part (the text cut before it is encoded). */
  messages(role: 'user' | 'assistant', text: string, extra?: Attributes): string {
    return JSON.stringify([{ role, parts: [{ type: 'text', content: this.cut(text) }], ...extra }])
  }
}
