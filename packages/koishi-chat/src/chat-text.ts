// Text between a delegation tree and a chat: what is posted (bounded, redacted, never markup) and
// what a reply means (plain text of the message's elements, control characters removed).
import { capForRedaction, type PendingQuestion, peerLine, peerText, Redactor } from '@cordis-subagents/shared'

/** The one redactor of this plugin (no configured secrets: credential shapes, URLs' user info and queries). */
const redactor = new Redactor([])

/**
 * `text` as a Koishi message that is only text: `&`, `<` and `>` escaped, so a question or an
 * answer that holds `<at type="all"/>` or any other element markup is shown, never sent as an element.
 */
export function chatText(text: string): string {
  let out = ''
  for (const c of text) out += c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c
  return out
}

/** Untrusted text cut to `max` characters (with a marker), then redacted: time linear in `max`. */
export function shown(text: string, max: number): string {
  const cut = text.length > max ? `${capForRedaction(text, max)} [cut at ${max} characters]` : text
  return redactor.redact(cut)
}

/**
 * A whole message (its prefix included) at most `max` characters once cut and redacted: a longer one keeps its
 * head, cut back to a token's edge, and ends with `… [cut at <max> characters]` inside the bound.
 */
export function shownWithin(text: string, max: number): string {
  const whole = text.length <= max ? redactor.redact(text) : undefined
  if (whole !== undefined && whole.length <= max) return whole
  const marker = ` [cut at ${max} characters]`
  const out = redactor.redact(`${capForRedaction(text, Math.max(0, max - marker.length - 1))}${marker}`)
  if (out.length <= max) return out
  // Redaction lengthened it (a short secret's placeholder): the bound wins.
  const end = /[\uD800-\uDBFF]/.test(out.charAt(max - 1)) ? max - 1 : max
  return out.slice(0, end)
}

/** Untrusted text on one line, at most `max` characters, redacted (a list entry, a label). */
export function shownLine(text: string, max: number): string {
  return peerLine(shown(text, max))
}

/** The message posting a question: its tag (what a reply or `subagents.answer` names), who asks, the text, numbered options. */
export function questionPost(tag: string, chatRunId: string, question: PendingQuestion, maxLength: number, howToAnswer: string): string {
  const from = question.path.length ? `subagent ${shownLine(question.path.join(' > '), 300)}` : 'the main agent'
  const lines = [`[${tag}] Question from ${from} of run ${chatRunId} (${question.kind}):`, shown(question.text, maxLength)]
  const options = (question.options ?? []).slice(0, 16)
  options.forEach((option, index) => lines.push(`${index + 1}. ${shownLine(option.name, 200)}`))
  if ((question.options?.length ?? 0) > options.length) lines.push(`(${question.options!.length - options.length} more options not shown)`)
  lines.push(howToAnswer)
  return chatText(lines.join('\n'))
}

/** An element of a received message, as far as reading its text needs. */
export interface ReplyElement { type: string, attrs: Record<string, unknown>, children: ReplyElement[] }

/**
 * The plain text of a reply: text as is, a mention as `@name`, other elements by their text
 * children (an image or a file gives nothing). At most `max + 1` characters are collected, so a
 * huge message costs no more than its cap; a mention of the bot itself is dropped; control, bidi and hidden characters are removed.
 */
export function replyText(elements: readonly ReplyElement[], max: number, selfId?: string): string {
  let out = ''
  const visit = (list: readonly ReplyElement[]) => {
    for (const element of list) {
      if (out.length > max) return
      if (element.type === 'text') out += String(element.attrs.content ?? '').slice(0, max + 1 - out.length)
      else if (element.type === 'at' && selfId !== undefined && element.attrs.id === selfId) continue
      else if (element.type === 'at') out += `@${String(element.attrs.name ?? element.attrs.id ?? element.attrs.type ?? '').slice(0, 64)}`
      else if (element.type !== 'quote') visit(element.children ?? [])
    }
  }
  visit(elements)
  return peerText(out).trim()
}

/** A chosen option by its number: "2" answers with option 2's id when the question offers options. */
export function optionAnswer(question: PendingQuestion, text: string): string {
  const options = question.options ?? []
  const n = /^\d{1,3}$/.test(text) ? Number(text) : 0
  return n >= 1 && n <= options.length ? options[n - 1]!.id : text
}
