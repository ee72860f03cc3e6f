import type { Attributes } from '@opentelemetry/api'

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
