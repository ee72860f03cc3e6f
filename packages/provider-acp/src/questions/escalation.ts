import type * as Acp from '@agentclientprotocol/sdk'
import { newQuestionId, type PendingQuestion, type Redactor } from '@cordis-subagents/shared'
import { SubagentError } from '@cordis-subagents/subagents-service'
import type { Waiting } from './parking.js'
import { chooseReject } from '../permission.js'
import { agentText } from '../sdk.js'

/** Most locations named in a permission question, and the longest of each. */
const MAX_LOCATIONS = 10
const LOCATION_CHARS = 300
/** Longest tool input (JSON) shown in a permission question. */
const INPUT_CHARS = 1000
/** Longest option name shown; an option id longer than `MAX_OPTION_ID` is left out of the question (its name still answers). */
const OPTION_CHARS = 200
const MAX_OPTION_ID = 256
/** Most options read from a request (what a question may carry: shared's checkedQuestion refuses more). */
const MAX_OPTIONS = 64

const ALLOW_WORDS = new Set(['allow', 'yes', 'y', 'approve', 'ok'])
const REJECT_WORDS = new Set(['reject', 'no', 'n', 'deny'])

/** What a permission answer picks: an option, or `cancelled` (a "no" when the agent offered no reject option). */
type Choice = Acp.PermissionOption | 'cancelled'

/** An escalated permission request: the question for the holder, and the agent's answer once someone gives one. */
export function escalatedPermission(
  params: Acp.RequestPermissionRequest, redactor: Redactor,
): { waiting: Waiting; response: Promise<Acp.RequestPermissionResponse> } {
  const options = (Array.isArray(params.options) ? params.options : []).slice(0, MAX_OPTIONS)
  const question = permissionQuestion(params, options, redactor)
  let respond!: (response: Acp.RequestPermissionResponse) => void
  const response = new Promise<Acp.RequestPermissionResponse>((resolve) => respond = resolve)
  const waiting: Waiting = {
    question,
    options: [...options],
    accept(answer) {
      const choice = namedOption(answer, options, redactor)
      return () => respond(choice === 'cancelled' ? { outcome: { outcome: 'cancelled' } } : { outcome: { outcome: 'selected', optionId: choice.optionId } })
    },
    drop: () => respond({ outcome: { outcome: 'cancelled' } }),
  }
  return { waiting, response }
}

/** The option an answer names; throws `INVALID_REQUEST` listing the options when it names none. */
export function namedOption(answer: string, options: readonly Acp.PermissionOption[], redactor: Redactor): Choice {
  const choice = chooseOption(answer, options)
  if (choice) return choice
  throw new SubagentError('INVALID_REQUEST', `The answer ${JSON.stringify(agentText(answer.trim(), 100))} names none of the options `
    + `${describeOptions(options, redactor) || '(the agent offered none)'}; answer with an option's id or name, or allow / reject.`)
}

/**
 * The option an answer names: an option id, else an option name (both case-insensitive), else
 * allow / yes → the first `allow_once` (else `allow_always`) option, reject / no → the least
 * destructive reject option (as `permission: reject` picks it; `cancelled` when none is offered).
 */
export function chooseOption(answer: string, options: readonly Acp.PermissionOption[]): Choice | undefined {
  const wanted = answer.trim().toLowerCase()
  const byId = options.find((option) => String(option.optionId).toLowerCase() === wanted)
  if (byId) return byId
  const byName = options.find((option) => typeof option.name === 'string' && option.name.trim().toLowerCase() === wanted)
  if (byName) return byName
  const ofKind = (kind: string) => options.find((option) => option.kind === kind)
  if (ALLOW_WORDS.has(wanted)) return ofKind('allow_once') ?? ofKind('allow_always')
  if (REJECT_WORDS.has(wanted)) return chooseReject(options) ?? 'cancelled'
  return undefined
}

/**
 * The question for a permission request: the tool call (title, kind, locations, input; every
 * part capped and scrubbed, control characters stripped) and the options on offer.
 */
function permissionQuestion(
  params: Acp.RequestPermissionRequest, options: readonly Acp.PermissionOption[], redactor: Redactor,
): PendingQuestion {
  const call = (params.toolCall ?? {}) as Partial<Acp.ToolCallUpdate>
  const lines = [`The agent asks permission for a tool call: ${agentText(String(call.title || call.toolCallId || 'a tool call'), 200)}`]
  if (typeof call.kind === 'string') lines.push(`kind: ${agentText(call.kind, 50)}`)
  const locations = Array.isArray(call.locations) ? call.locations.slice(0, MAX_LOCATIONS) : []
  const paths = locations.map((location) => agentText(String(location?.path ?? ''), LOCATION_CHARS)).filter(Boolean)
  if (paths.length) lines.push(`locations: ${paths.join(', ')}`)
  const input = inputText(call.rawInput)
  if (input) lines.push(`input: ${input}`)
  const offered = describeOptions(options, redactor)
  lines.push(offered ? `options: ${offered}` : 'options: none offered (answer reject to refuse)')
  const question: PendingQuestion = { id: newQuestionId(), kind: 'permission', text: redactor.redact(lines.join('\n')), path: [] }
  // Ids are protocol tokens, passed as they are; a name is shown scrubbed (and never empty).
  question.options = options.filter((option) => isOptionId(String(option.optionId))).map((option) => ({
    id: String(option.optionId),
    name: redactor.redact(agentText(String(option.name || option.optionId), OPTION_CHARS)) || String(option.optionId),
  }))
  return question
}

function describeOptions(options: readonly Acp.PermissionOption[], redactor: Redactor): string {
  return redactor.redact(options.map((option) => {
    const name = agentText(String(option.name ?? ''), 100)
    const id = agentText(String(option.optionId), 100)
    return `"${name || id}" (${id}${option.kind ? `, ${option.kind}` : ''})`
  }).join('; '))
}

function inputText(raw: unknown): string {
  if (raw === undefined || raw === null) return ''
  let text: string
  try {
    text = typeof raw === 'string' ? raw : JSON.stringify(raw) ?? ''
  } catch {
    return ''
  }
  return agentText(text, INPUT_CHARS)
}

function isOptionId(id: string): boolean {
  return id.length > 0 && id.length <= MAX_OPTION_ID
}
