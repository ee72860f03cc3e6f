import { describeError, toolFilterProblem } from '@cordis-subagents/shared'
import { z } from 'zod'
import { ToolError } from './errors.js'
import type { Tool, ToolCall, ToolExecContext, ToolFilter, ToolResult, ToolSpec } from './types.js'

export interface RegisteredTool {
  tool: Tool
  spec: ToolSpec
}

/** The registry as a view reads it: always the current set of tools. */
export interface ToolSource {
  get(name: string): RegisteredTool | undefined
  values(): Iterable<RegisteredTool>
}

type Predicate = (name: string) => boolean

export function validateFilter(filter: ToolFilter): void {
  const problem = toolFilterProblem(filter, 'The tool filter')
  if (problem) throw new ToolError('INVALID_FILTER', problem)
}

function toPredicate(filter: ToolFilter | undefined): Predicate {
  if (!filter) return () => true
  const allow = filter.allow && new Set(filter.allow)
  const deny = new Set(filter.deny ?? [])
  return (name) => (!allow || allow.has(name)) && !deny.has(name)
}

/**
 * A live window onto the registry. Every call reads the registry as it is now, so tools
 * that come and go are seen at once. A view made by `restrict` sees the intersection of
 * its parent's predicate and its own filter: it can never see more than its parent.
 */
export class ToolView {
  private readonly visible: Predicate

  constructor(private readonly source: ToolSource, filter?: ToolFilter, parent?: Predicate) {
    if (filter) validateFilter(filter)
    const own = toPredicate(filter)
    this.visible = parent ? (name) => parent(name) && own(name) : own
  }

  has(name: string): boolean {
    return this.visible(name) && !!this.source.get(name)
  }

  names(): string[] {
    return this.list().map((spec) => spec.name)
  }

  list(): ToolSpec[] {
    const specs: ToolSpec[] = []
    for (const entry of this.source.values()) {
      // Specs are deeply frozen at registration, so handing out the same objects is safe.
      if (this.visible(entry.spec.name)) specs.push(entry.spec)
    }
    return specs
  }

  restrict(filter: ToolFilter): ToolView {
    return new ToolView(this.source, filter, this.visible)
  }

  /**
   * Runs one tool call. Never throws or rejects: every failure (unknown or filtered name,
   * aborted signal, invalid input, a throwing tool, a malformed result) is an `isError`
   * result the model can read.
   */
  async execute(call: ToolCall, exec: ToolExecContext): Promise<ToolResult> {
    let name = '(unnamed)'
    try {
      name = typeof call?.name === 'string' ? call.name : String(call?.name)
      const entry = this.visible(name) ? this.source.get(name) : undefined
      if (!entry) {
        const available = this.names()
        return {
          isError: true,
          content: `Unknown tool "${name}". Available tools: ${available.length ? available.join(', ') : '(none)'}.`,
        }
      }
      if (exec?.signal?.aborted) {
        return { isError: true, content: `Tool "${name}" was not run: the call was aborted before it started.` }
      }
      const parsed = await parseInput(entry.tool.input, call.input ?? {})
      if (!parsed.success) {
        return { isError: true, content: `Invalid input for tool "${name}":\n${z.prettifyError(parsed.error)}` }
      }
      if (exec?.signal?.aborted) {
        return { isError: true, content: `Tool "${name}" was not run: the call was aborted before it started.` }
      }
      const result = await entry.tool.execute(parsed.data, exec)
      if (!result || typeof result !== 'object' || typeof result.content !== 'string') {
        return { isError: true, content: `Tool "${name}" returned an invalid result (expected { content: string }).` }
      }
      return result
    } catch (error) {
      return { isError: true, content: `Tool "${name}" failed: ${describeError(error)}` }
    }
  }
}

/**
 * Parses synchronously (no promise per call for the usual schema); a schema with async refinements
 * or transforms makes zod throw `$ZodAsyncError` there, and is parsed asynchronously instead.
 */
type Parsed<T extends z.ZodType> = z.ZodSafeParseResult<z.output<T>>

function parseInput<T extends z.ZodType>(schema: T, input: unknown): Parsed<T> | Promise<Parsed<T>> {
  try {
    return schema.safeParse(input)
  } catch (error) {
    if (error instanceof z.core.$ZodAsyncError) return schema.safeParseAsync(input)
    throw error
  }
}
