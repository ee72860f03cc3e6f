import type { Attributes } from '@opentelemetry/api'

/** Longest name or id a span carries (tool names and call ids come from the model). */
const MAX_NAME_LENGTH = 256

/** A name or id from outside, bounded: a hostile model must not put a megabyte in a span name. */
export function bounded(value: string): string {
  return value.length <= MAX_NAME_LENGTH ? value : `${value.slice(0, MAX_NAME_LENGTH)}…`
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
