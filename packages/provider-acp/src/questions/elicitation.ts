import type * as Acp from '@agentclientprotocol/sdk'
import { newQuestionId, type PendingQuestion, type Redactor } from '@cordis-subagents/shared'
import { SubagentError } from '@cordis-subagents/subagents-service'
import type { Waiting } from './parking.js'
import { agentText } from '../sdk.js'

/** Fields of a form read from a request; the longest field description shown. */
const MAX_FIELDS = 32
const FIELD_CHARS = 300
const MESSAGE_CHARS = 2000

type Field = { name: string; type: string; description?: string; required: boolean; choices?: string[] }
type Value = string | number | boolean | string[]

const DECLINE = new Set(['decline', 'no', 'n', 'reject'])
const CANCEL = new Set(['cancel'])

/** The form fields of an `elicitation/create` in form mode (at most MAX_FIELDS); undefined for another mode. */
function formFields(params: Acp.CreateElicitationRequest): Field[] | undefined {
  const form = params as { mode?: unknown; requestedSchema?: { properties?: unknown; required?: unknown } }
  if (form.mode !== 'form') return undefined
  const properties = form.requestedSchema?.properties && typeof form.requestedSchema.properties === 'object' ? form.requestedSchema.properties : {}
  const required = new Set(Array.isArray(form.requestedSchema?.required) ? form.requestedSchema.required.map(String) : [])
  return Object.entries(properties as Record<string, Record<string, unknown>>).slice(0, MAX_FIELDS).map(([name, schema]) => {
    const choices = Array.isArray(schema?.enum) ? schema.enum.map(String) : undefined
    const description = typeof schema?.description === 'string' ? agentText(schema.description, FIELD_CHARS) : undefined
    return { name, type: typeof schema?.type === 'string' ? schema.type : 'string', required: required.has(name), ...description ? { description } : {}, ...choices ? { choices } : {} }
  })
}

/**
 * An agent's `elicitation/create` (stable in ACP v1) in form mode, escalated like a permission request:
 * the question lists the fields; the answer is a JSON object of them, or the value itself when the form
 * has one field, or decline / cancel. Undefined for a request this provider does not ask (URL mode).
 */
export function escalatedElicitation(
  params: Acp.CreateElicitationRequest, redactor: Redactor,
): { waiting: Waiting; response: Promise<Acp.CreateElicitationResponse> } | undefined {
  const fields = formFields(params)
  if (!fields) return undefined
  const lines = [`The agent asks for input: ${agentText(String(params.message ?? ''), MESSAGE_CHARS)}`]
  for (const field of fields) {
    const extra = [field.type, field.required ? 'required' : 'optional', ...field.choices ? [`one of ${field.choices.join(' | ')}`] : []].join(', ')
    lines.push(`- ${agentText(field.name, 100)} (${extra})${field.description ? `: ${field.description}` : ''}`)
  }
  lines.push(fields.length === 1 ? 'Answer with the value, or decline / cancel.' : 'Answer with a JSON object of these fields, or decline / cancel.')
  const question: PendingQuestion = { id: newQuestionId(), kind: 'ask', text: redactor.redact(lines.join('\n')), path: [] }
  let respond!: (response: Acp.CreateElicitationResponse) => void
  const response = new Promise<Acp.CreateElicitationResponse>((resolve) => respond = resolve)
  const waiting: Waiting = {
    question,
    accept(answer) {
      const reply = elicitationReply(answer, fields)
      return () => respond(reply)
    },
    drop: () => respond({ action: 'cancel' }),
  }
  return { waiting, response }
}

/** The reply an answer gives: decline, cancel, or accept with the form's values (throws `INVALID_REQUEST` saying what is wrong). */
function elicitationReply(answer: string, fields: readonly Field[]): Acp.CreateElicitationResponse {
  const text = answer.trim()
  if (DECLINE.has(text.toLowerCase())) return { action: 'decline' }
  if (CANCEL.has(text.toLowerCase())) return { action: 'cancel' }
  let given: Record<string, unknown>
  if (fields.length === 1 && !text.startsWith('{')) given = { [fields[0].name]: text }
  else {
    try {
      given = JSON.parse(text) as Record<string, unknown>
    } catch {
      given = undefined as never
    }
    if (!given || typeof given !== 'object' || Array.isArray(given)) {
      throw new SubagentError('INVALID_REQUEST', `Answer the form with a JSON object of its fields (${fields.map((f) => f.name).join(', ')}), or decline / cancel.`)
    }
  }
  const content: Record<string, Value> = {}
  for (const field of fields) {
    const value = coerce(given[field.name], field)
    if (value === undefined) {
      if (field.required) throw new SubagentError('INVALID_REQUEST', `The form's field ${field.name} (${field.type}${field.choices ? `, one of ${field.choices.join(' | ')}` : ''}) is required.`)
      continue
    }
    content[field.name] = value
  }
  return { action: 'accept', content }
}

function coerce(value: unknown, field: Field): Value | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (field.type === 'boolean') {
    if (typeof value === 'boolean') return value
    const word = String(value).toLowerCase()
    return word === 'true' || word === 'yes' ? true : word === 'false' || word === 'no' ? false : undefined
  }
  if (field.type === 'number' || field.type === 'integer') {
    const number = typeof value === 'number' ? value : Number(String(value).trim())
    return Number.isFinite(number) && (field.type === 'number' || Number.isInteger(number)) ? number : undefined
  }
  if (field.type === 'array') return Array.isArray(value) ? value.map(String) : String(value).split(',').map((part) => part.trim()).filter(Boolean)
  const text = String(value)
  return field.choices && !field.choices.includes(text) ? undefined : text
}
