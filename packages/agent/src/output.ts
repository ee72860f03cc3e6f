import { createRequire } from 'node:module'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { countProblem, describeError, nestingDepth } from '@cordis-subagents/shared'
import type { ToolSpec } from '@cordis-subagents/tools'
import { AgentError } from './errors.js'
import type { ChatModel, GenerateRequest, Message, ModelToolCall } from './types.js'

// Typed results: an `output` JSON Schema the final answer of a run must match. The contract (a
// checked, compiled schema) is made once per schema; a turn gets a `TypedTurn` that shapes each
// model call (structured output, else a final-answer tool) and reviews each answer.

/** Largest output schema, in characters of its JSON. */
export const MAX_OUTPUT_SCHEMA_CHARS = 16 * 1024
/** Deepest nesting of objects and arrays in an output schema's JSON. */
export const MAX_OUTPUT_SCHEMA_DEPTH = 16
/** Largest answer value, in characters of its JSON. */
export const MAX_OUTPUT_VALUE_CHARS = 64 * 1024
/** Correction messages a run gets by default before it ends `invalid_output`. */
export const DEFAULT_OUTPUT_CORRECTIONS = 2
/** Most corrections a run may be given. */
export const MAX_OUTPUT_CORRECTIONS = 10
/** The tool a model without structured outputs answers through. */
export const FINAL_ANSWER_TOOL = 'final_answer'

/** What a caller gives: a JSON Schema whose root is an object schema (`type: 'object'`), and how many corrections a run gets. */
export interface OutputOptions {
  schema: Record<string, unknown>
  /** Correction messages before the run ends `invalid_output` (default 2, at most 10). */
  maxCorrections?: number
}

/** A checked, compiled output schema. */
export interface OutputContract {
  readonly schema: Record<string, unknown>
  readonly maxCorrections: number
  /** Undefined when `value` matches, else the validation error in words. */
  check(value: unknown): string | undefined
  /** The value of an answer's text (JSON, alone or in one fenced block), checked. */
  parse(text: string): { value: unknown } | { problem: string }
}

const compiled = new WeakMap<object, { schema: Record<string, unknown>; validate: ValidateFunction }>()

/** `options` checked and compiled; `INVALID_OUTPUT_SCHEMA` (naming `where`) when it cannot be used. */
export function outputContract(options: unknown, where = 'output'): OutputContract {
  const fail = (problem: string): never => {
    throw new AgentError('INVALID_OUTPUT_SCHEMA', `${where} ${problem}`)
  }
  if (!options || typeof options !== 'object' || Array.isArray(options)) fail('must be an object: { schema, maxCorrections? }.')
  const { schema, maxCorrections = DEFAULT_OUTPUT_CORRECTIONS } = options as OutputOptions
  const problem = countProblem(`${where}.maxCorrections`, maxCorrections, { max: MAX_OUTPUT_CORRECTIONS })
  if (problem) fail(`has a bad correction count: ${problem}`)
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) fail('.schema must be a JSON Schema object.')
  let entry = compiled.get(schema)
  if (!entry) {
    entry = compile(schema, fail)
    compiled.set(schema, entry)
  }
  const { validate } = entry
  const check = (value: unknown) => checkValue(validate, value)
  return {
    schema: entry.schema,
    maxCorrections,
    check,
    parse(text) {
      const parsed = parseJson(text)
      if ('problem' in parsed) return parsed
      const error = check(parsed.value)
      return error ? { problem: error } : parsed
    },
  }
}

function compile(schema: Record<string, unknown>, fail: (problem: string) => never) {
  let json: string
  try {
    json = JSON.stringify(schema)
  } catch (error) {
    return fail(`.schema is not JSON: ${describeError(error)}.`)
  }
  if (json.length > MAX_OUTPUT_SCHEMA_CHARS) fail(`.schema is ${json.length} characters of JSON; the most is ${MAX_OUTPUT_SCHEMA_CHARS}.`)
  if (nestingDepth(JSON.parse(json), MAX_OUTPUT_SCHEMA_DEPTH) > MAX_OUTPUT_SCHEMA_DEPTH) {
    fail(`.schema nests more than ${MAX_OUTPUT_SCHEMA_DEPTH} levels deep; the most is ${MAX_OUTPUT_SCHEMA_DEPTH}.`)
  }
  // A copy of our own: the caller's object may change later, and `$schema` names a dialect ajv may not load.
  const { $schema: _, ...body } = JSON.parse(json) as Record<string, unknown>
  if (body.type !== 'object') fail('.schema must describe an object (`type: \'object\'` at its root): models answer with an object.')
  let validate: ValidateFunction
  try {
    const ajv = new (loadAjv())({
      allErrors: true, strictSchema: true, strictTypes: false, strictTuples: false, strictRequired: false, validateFormats: false,
      // A model's answer (64 KiB) must never meet a backtracking regex on the event loop: no `pattern`, no `patternProperties`.
      code: { regExp: Object.assign(refusePattern, { code: 'refusePattern' }) },
    })
    validate = ajv.compile(body)
  } catch (error) {
    return fail(`.schema is not a valid JSON Schema: ${describeError(error).slice(0, 500)}`)
  }
  return { schema: Object.freeze(body), validate }
}

function refusePattern(pattern: string): never {
  throw new Error(`\`pattern\` and \`patternProperties\` are not supported in an output schema (JavaScript regexes backtrack on a model's answer): remove ${JSON.stringify(pattern.slice(0, 80))}, or check it in the parent`)
}

/** ajv is loaded on the first output schema (its import takes tens of ms; most agents never have one). */
let ajvClass: typeof import('ajv').Ajv | undefined
function loadAjv(): typeof import('ajv').Ajv {
  return ajvClass ??= (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv
}

function checkValue(validate: ValidateFunction, value: unknown): string | undefined {
  let json: string | undefined
  try {
    json = JSON.stringify(value)
  } catch (error) {
    return `the value is not JSON (${describeError(error)})`
  }
  if (json === undefined) return 'there is no value'
  if (json.length > MAX_OUTPUT_VALUE_CHARS) return `the value is ${json.length} characters of JSON; the most is ${MAX_OUTPUT_VALUE_CHARS}`
  if (validate(value)) return undefined
  return describeErrors(validate.errors ?? [])
}

/** At most 5 issues, each `path: message`, 1,000 characters in all. */
function describeErrors(errors: ErrorObject[]): string {
  const issues = errors.slice(0, 5).map((error) => `${error.instancePath || '(root)'} ${error.message ?? 'is invalid'}`)
  if (errors.length > 5) issues.push(`and ${errors.length - 5} more`)
  return issues.join('; ').slice(0, 1000)
}

const FENCED = /^```[A-Za-z]*\s*\n([\s\S]*?)\n?```$/

/** JSON text, alone or as one fenced block (```json … ```), tolerating blank space around it. */
export function parseJson(text: string): { value: unknown } | { problem: string } {
  let body = text.trim()
  if (!body) return { problem: 'the answer is empty, not JSON' }
  const fenced = FENCED.exec(body) ?? /```(?:json)?\s*\n([\s\S]*?)\n?```/.exec(body)
  if (fenced) body = fenced[1].trim()
  if (body.length > MAX_OUTPUT_VALUE_CHARS) return { problem: `the answer is ${body.length} characters; the most is ${MAX_OUTPUT_VALUE_CHARS}` }
  try {
    return { value: JSON.parse(body) as unknown }
  } catch (error) {
    return { problem: `the answer is not JSON (${describeError(error).slice(0, 200)})` }
  }
}

/** The prompt of a child elsewhere (ACP, A2A) that has an output schema: the task, then what its answer must be. */
export function outputPrompt(prompt: string, contract: OutputContract | undefined): string {
  if (!contract) return prompt
  return `${prompt}\n\nYour final message must be only a JSON value (no other text; a single \`\`\`json block is fine) `
    + `that matches this JSON Schema:\n${JSON.stringify(contract.schema)}`
}

/** What reviewing an answer decided: the value, one more try (a correction was written), or the end. */
export type OutputVerdict = { value: unknown; text: string } | { fail: string } | 'again'

/** One turn's typed answer: how its model calls are shaped and how many corrections it used. */
export class TypedTurn {
  corrections = 0
  private structured = false

  constructor(readonly contract: OutputContract) {}

  /** Asks `model` for structured output when it supports it, else offers the final-answer tool. */
  shape(request: GenerateRequest, model: ChatModel): void {
    this.structured = model.structuredOutput === true
    if (this.structured) request.output = { name: FINAL_ANSWER_TOOL, schema: this.contract.schema }
    else request.tools = [...request.tools, this.tool()]
  }

  tool(): ToolSpec {
    return {
      name: FINAL_ANSWER_TOOL,
      description: 'Give your final answer: call this once, with the answer as its arguments. Your turn ends when it is accepted.',
      parameters: this.contract.schema,
    }
  }

  /**
   * Reviews a step: undefined when it is ordinary work (tool calls, none of them the final answer).
   * Answers every call of a step that gives a final answer (the others are not run) and writes a
   * correction when there is one left.
   */
  review(text: string, calls: ModelToolCall[], push: (message: Message) => void, note?: string): OutputVerdict | undefined {
    const final = this.structured ? undefined : calls.find((call) => call.name === FINAL_ANSWER_TOOL)
    if (calls.length && !final) return undefined
    let problem: string
    let value: unknown
    if (final) {
      problem = final.invalidInput ?? this.contract.check(final.input) ?? ''
      value = final.input
      for (const call of calls) {
        const content = call !== final
          ? `Not run: ${FINAL_ANSWER_TOOL} ends the turn; call other tools in a step of their own.`
          : problem ? `Your answer does not match the schema: ${problem}. Call ${FINAL_ANSWER_TOOL} again with a corrected answer.` : 'Accepted.'
        push(call === final && problem ? { role: 'tool', toolCallId: call.id, name: call.name, content, isError: true } : { role: 'tool', toolCallId: call.id, name: call.name, content })
      }
      if (note) push({ role: 'user', content: note })
    } else {
      const parsed = this.contract.parse(text)
      problem = 'problem' in parsed ? parsed.problem : ''
      value = 'value' in parsed ? parsed.value : undefined
    }
    if (!problem) return { value, text: JSON.stringify(value) }
    if (this.corrections >= this.contract.maxCorrections) {
      return { fail: `The answer does not match the output schema after ${this.corrections} correction(s): ${problem}.` }
    }
    this.corrections++
    if (!final) {
      const how = this.structured ? 'Answer with JSON that matches the schema you were given' : `Call the ${FINAL_ANSWER_TOOL} tool with your answer`
      push({ role: 'user', content: `Your answer does not match the required output schema: ${problem}. ${how}.` })
    }
    return 'again'
  }
}
