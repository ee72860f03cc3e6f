import { z } from 'zod'
import { describeError, isCount, NAME_PATTERN } from '@cordis-subagents/shared'
import { ToolError } from './errors.js'
import type { Tool, ToolSpec } from './types.js'

// A tool checked and turned into the frozen spec a model sees (registry and private view tools alike).

export function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new ToolError('INVALID_TOOL', `Invalid tool name ${JSON.stringify(name)}: use 1-64 characters of A-Z, a-z, 0-9, "_" or "-".`)
  }
}

/** JSON Schema per zod schema object: a tool re-registered with the same input skips the conversion. */
const jsonSchemas = new WeakMap<z.ZodObject, Record<string, unknown>>()

export function checkTool(tool: Tool<any>): ToolSpec {
  if (!tool || typeof tool !== 'object') throw new ToolError('INVALID_TOOL', 'A tool must be an object.')
  checkName(tool.name)
  if (typeof tool.description !== 'string' || !tool.description.trim()) {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" needs a non-empty string description (the model reads it to decide when to call the tool).`)
  }
  if (typeof tool.execute !== 'function') {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" needs an execute function.`)
  }
  if (tool.resume !== undefined && typeof tool.resume !== 'function') {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" has a resume that is not a function: give a resume(answer, suspension, exec) method, or omit it.`)
  }
  if (tool.withdrawn !== undefined && typeof tool.withdrawn !== 'function') {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" has a withdrawn that is not a function: give a withdrawn(suspension, exec) method, or omit it.`)
  }
  const { maxCallerDepth } = tool
  if (maxCallerDepth !== undefined && !isCount(maxCallerDepth)) {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" has maxCallerDepth ${String(maxCallerDepth)}: use an integer >= 0 (0: only agents at depth 0 see it), or omit it so agents at every depth do.`)
  }
  if (!(tool.input instanceof z.ZodObject)) {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" needs a zod object schema as its input.`)
  }
  if (tool.parameters !== undefined) {
    return deepFreeze({ name: tool.name, description: tool.description, parameters: givenParameters(tool) })
  }
  let schema = jsonSchemas.get(tool.input)
  if (!schema) try {
    schema = z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>
    jsonSchemas.set(tool.input, schema)
  } catch (error) {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" has an input schema that cannot be expressed as JSON Schema (${describeError(error)}); use JSON-representable zod types.`)
  }
  const { $schema: _, ...parameters } = schema
  return deepFreeze({ name: tool.name, description: tool.description, parameters })
}

/** A tool's own JSON Schema: a plain object schema, copied (the tool keeps its object). */
function givenParameters(tool: Tool<any>): Record<string, unknown> {
  const given: unknown = tool.parameters
  if (!given || typeof given !== 'object' || Array.isArray(given) || (given as { type?: unknown }).type !== 'object') {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" has parameters that are not a JSON Schema object ({ "type": "object", ... }).`)
  }
  let copy: Record<string, unknown>
  try {
    copy = JSON.parse(JSON.stringify(given)) as Record<string, unknown>
  } catch (error) {
    throw new ToolError('INVALID_TOOL', `Tool "${tool.name}" has parameters that are not JSON (${describeError(error)}).`)
  }
  const { $schema: _, ...parameters } = copy
  return parameters
}

/** Specs are shared by every view and every model request, so nobody may edit them. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}
