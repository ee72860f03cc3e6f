// Message chunks an ACP agent sends that are its own notices, not its model's words.
//
// codex-acp forwards Codex's warnings with the same call that streams model text: no messageId, and
// no `notice` update in its ACP schema (we advertise notices; it ignores them). Nothing in the traffic
// separates such a warning from the answer after it (issue 40), so the known ones are listed here,
// per agent, and matched against one whole chunk (codex-acp sends a warning as a single chunk) with
// plain string checks: no regex runs on agent text. An agent that sends `notice` updates, or marks
// its messages with ids, needs no entry.

interface Template {
  prefix: string
  suffix: string
  /** The longest the variable part between them may be (a model name). */
  maxMiddle: number
}

const KNOWN: Readonly<Record<string, readonly Template[]>> = {
  'codex-acp': [
    // Codex 0.16 at the start of every turn whose model it has no metadata for.
    {
      prefix: 'Model metadata for `',
      suffix: '` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.',
      maxMiddle: 256,
    },
  ],
}

/** Whether `text`, one whole message chunk of agent `agentName` (its initialize `agentInfo.name`), is one of its known notices. */
export function isAgentNotice(agentName: string | undefined, text: string): boolean {
  const templates = agentName === undefined ? undefined : KNOWN[agentName]
  if (!templates) return false
  return templates.some(({ prefix, suffix, maxMiddle }) => text.length <= prefix.length + suffix.length + maxMiddle
    && text.length >= prefix.length + suffix.length && text.startsWith(prefix) && text.endsWith(suffix))
}
