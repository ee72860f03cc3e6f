import type { Attributes } from '@opentelemetry/api'

/** Longest name or id a span carries (tool names and call ids come from the model). */
const MAX_NAME_LENGTH = 256

/**
 * Characters no name or id may carry into a span: C0 controls (tab and newline included), DEL, C1
 * controls, bidi controls (which reorder what a trace viewer shows) and invisible zero-width ones.
 * One character class: linear, and ESC is removed, so no escape sequence can survive.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g
/** The same, but keeping newline and tab: for status messages, which are text. */
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g

/**
 * A name or id from outside (a tool name, a call id, an agent label, a provider name, an error
 * class), cleaned of control characters and bounded: a hostile model must not put a megabyte or a
 * terminal escape in a span name. Only a bounded prefix is scanned.
 */
export function bounded(value: string): string {
  const clean = value.slice(0, MAX_NAME_LENGTH * 4).replace(CONTROL, '')
  return clean.length <= MAX_NAME_LENGTH && value.length <= MAX_NAME_LENGTH * 4 ? clean : `${clean.slice(0, MAX_NAME_LENGTH)}…`
}

/** A status message (already bounded by the caller) without control characters other than newline and tab. */
export function cleanText(text: string): string {
  return text.replace(CONTROL_IN_TEXT, '')
}

/** What a span may record of prompts, output and tool data: nothing unless `captureContent` is on. */
export class ContentPolicy {
  constructor(readonly capture: boolean, private readonly maxLength: number) {}

  /** `text` cut to the configured length (a marker says how much was cut). */
  cut(text: string): string {
    if (text.length <= this.maxLength) return text
    return `${text.slice(0, this.maxLength)}… [${text.length - this.maxLength} more characters]`
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
