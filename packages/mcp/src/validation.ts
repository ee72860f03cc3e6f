import { Ajv, type ErrorObject } from 'ajv'
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'
import { describeError, headChars } from '@cordis-subagents/shared'
import { safeRegExp, type SafeRegExp, UnsupportedPattern } from './safe-regexp.js'

/** Largest schema validated on the host (characters of JSON); a larger one is left to the server. */
const MAX_VALIDATED_SCHEMA_CHARS = 16 * 1024
/** Most patterns compiled for one schema; a `pattern` past it is not checked, a `patternProperties` key leaves the schema to the server. */
const MAX_PATTERNS = 16

interface Issue {
  path: string[]
  message: string
}

/** The issues of a value against a schema (none: valid). */
export type Check = (value: unknown) => Issue[]

/**
 * A server's JSON Schema checked on the host with ajv (draft-07 keywords; unknown keywords and
 * `format` are not checked), every regex on RE2 (`safeRegExp`). Compiled on the first check, not
 * when the tool is listed. A `pattern` RE2 cannot run is not checked (`warn` says so once); a schema
 * that cannot be compiled, with such a `patternProperties` key, or over 16 KiB of JSON is not checked
 * at all. In every such case the server still validates its input.
 */
export function schemaCheck(schema: Record<string, unknown>, warn: (reason: string) => void): Check {
  let compiled: Check | undefined
  return (value) => {
    compiled ??= compile(schema, warn)
    return compiled(value)
  }
}

function compile(schema: Record<string, unknown>, warn: (reason: string) => void): Check {
  const none: Check = () => []
  let size: number
  try {
    size = JSON.stringify(schema).length
  } catch {
    size = Infinity
  }
  if (size > MAX_VALIDATED_SCHEMA_CHARS) {
    warn(`its schema is over ${MAX_VALIDATED_SCHEMA_CHARS} characters, so its input is left to the server to validate`)
    return none
  }
  const skipped: string[] = []
  try {
    const { $schema: _, ...body } = schema
    const validate = patternSafeAjv(skipped).compile(body)
    if (skipped.length) warn(`${skipped.join('; ')}: not checked on the host (the server validates it)`)
    return (value) => validate(value) ? [] : (validate.errors ?? []).map(issue)
  } catch (error) {
    warn(`its schema cannot be checked on the host (${headChars(describeError(error), 300)}), so its input is left to the server to validate`)
    return none
  }
}

/** An ajv whose every regex is a `SafeRegExp`; `pattern` is its own keyword so an unsupported one can be skipped alone. */
function patternSafeAjv(skipped: string[]): Ajv {
  let patterns = 0
  const compilePattern = (pattern: string): SafeRegExp => {
    if (++patterns > MAX_PATTERNS) throw new UnsupportedPattern(`the schema has more than ${MAX_PATTERNS} patterns`)
    return safeRegExp(pattern)
  }
  const ajv = new Ajv({
    strict: false,
    validateSchema: false,
    validateFormats: false,
    allErrors: false,
    code: { optimize: false, regExp: Object.assign((pattern: string) => compilePattern(pattern), { code: 'safeRegExp' }) },
  })
  ajv.removeKeyword('pattern')
  ajv.addKeyword({
    keyword: 'pattern',
    type: 'string',
    schemaType: 'string',
    compile(pattern: string) {
      let regExp: SafeRegExp
      try {
        regExp = compilePattern(pattern)
      } catch (error) {
        if (!(error instanceof UnsupportedPattern)) throw error
        skipped.push(`pattern ${JSON.stringify(headChars(pattern, 100))}: ${error.message}`)
        return () => true
      }
      const check = (data: string) => {
        if (regExp.test(data)) return true
        check.errors = [{ keyword: 'pattern', message: `must match pattern "${headChars(pattern, 200)}"`, params: { pattern } }]
        return false
      }
      check.errors = [] as Partial<ErrorObject>[]
      return check
    },
  })
  return ajv
}

function issue(error: ErrorObject): Issue {
  const path = error.instancePath.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
  return { path, message: error.message ?? `fails ${error.keyword}` }
}

/** The MCP SDK client's validator of tool output schemas, on the same engine (it would otherwise compile them with native regexes). */
export const outputSchemas: jsonSchemaValidator = {
  getValidator<T>(schema: unknown) {
    const check = schemaCheck(schema && typeof schema === 'object' ? schema as Record<string, unknown> : {}, () => {})
    return (input: unknown) => {
      const issues = check(input)
      if (!issues.length) return { valid: true as const, data: input as T, errorMessage: undefined }
      const errorMessage = issues.map((i) => `${i.path.length ? `/${i.path.join('/')} ` : ''}${i.message}`).join('; ')
      return { valid: false as const, data: undefined, errorMessage }
    }
  },
}
