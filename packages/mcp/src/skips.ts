import { describeError, headChars, peerLine } from '@cordis-subagents/shared'

/** The head of a server's tool name quoted in a log line (UTF-16 code units, cut on a character boundary). */
const QUOTED_NAME_CHARS = 100
/** The head of an error quoted in a log line. */
const QUOTED_ERROR_CHARS = 200

/** Why a listed tool was not mounted, in the order the summary names them. */
export type SkipKind = 'unnamed' | 'too-long' | 'duplicate' | 'max-tools' | 'too-large' | 'refused'

const ORDER: readonly SkipKind[] = ['unnamed', 'too-long', 'duplicate', 'max-tools', 'too-large', 'refused']

/**
 * A server's tool name as a log line quotes it: its head, cut before it is cleaned to one line (`peerLine`, so the work
 * is bounded whatever the name's size), then quoted as JSON.
 */
export function quotedName(name: unknown): string {
  return typeof name === 'string' ? JSON.stringify(peerLine(headChars(name, QUOTED_NAME_CHARS))) : '(no name)'
}

/** An error as a log line quotes it: the head of its description, on one line. */
export function quotedError(error: unknown): string {
  return peerLine(headChars(describeError(error), QUOTED_ERROR_CHARS))
}

/** What a summary needs to say why: the server, and the bounds a tool broke. */
export interface SkipLimits {
  server: string
  maxTools: number
  maxSchemaChars: number
}

/**
 * What one listing skipped, by kind: how many, and the first one as a log line quotes it, made when it was seen (never
 * more than a head of a name is held). `line()` is the listing's one log line, whatever the number of tools skipped.
 */
export class Skips {
  private readonly kinds = new Map<SkipKind, { count: number; first: string }>()

  /** `count` more tools skipped for `kind`; `first` is called only for the first of that kind. */
  add(kind: SkipKind, first: () => string, count = 1) {
    const seen = this.kinds.get(kind)
    if (seen) seen.count += count
    else this.kinds.set(kind, { count, first: first() })
  }

  /**
   * One line for the listing, or undefined when nothing was skipped: `fx: 3 of 40 listed tools skipped: 2 whose name is
   * over 64 characters as fx__<tool> (first "…" (70 characters)); 1 …`.
   */
  line(listed: number, limits: SkipLimits): string | undefined {
    if (!this.kinds.size) return undefined
    let total = 0
    const parts: string[] = []
    for (const kind of ORDER) {
      const seen = this.kinds.get(kind)
      if (!seen) continue
      total += seen.count
      parts.push(`${seen.count} ${reason(kind, limits)}${kind === 'unnamed' ? '' : ` (first ${seen.first})`}`)
    }
    return `${limits.server}: ${total} of ${listed} listed tools skipped: ${parts.join('; ')}`
  }
}

function reason(kind: SkipKind, { server, maxTools, maxSchemaChars }: SkipLimits): string {
  switch (kind) {
    case 'unnamed': return 'without a name'
    case 'too-long': return `whose name is over 64 characters as ${server}__<tool>`
    case 'duplicate': return 'named like an earlier tool of the listing once sanitized'
    case 'max-tools': return `listed after the first maxTools (${maxTools}) were taken`
    case 'too-large': return `whose name, description and input schema are over ${maxSchemaChars} characters of JSON`
    case 'refused': return 'the tool registry refused'
  }
}
