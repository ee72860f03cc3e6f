import { countProblem, describeError, headChars, isCount, toolFilterProblem } from '@cordis-subagents/shared'
import { z } from 'zod'
import { ToolError } from './errors.js'
import type { Tool, ToolCall, ToolExecContext, ToolFilter, ToolResult, ToolSpec, ToolSuspension } from './types.js'
import { checkTool } from './tool-spec.js'

export interface RegisteredTool {
  tool: Tool
  spec: ToolSpec
  /** The deepest agent that sees the tool (`tool.maxCallerDepth`, read once at registration); undefined: every depth. */
  maxCallerDepth?: number
}

/**
 * The registry as a view reads it: its live table of tools (the registry's own map, so a view sees
 * every change at once and a call runs no registry code) and its result cap.
 */
export interface ToolSource {
  readonly entries: ReadonlyMap<string, RegisteredTool>
  /** The registry's cap on one result's content, in UTF-8 bytes. */
  readonly maxResultBytes: number
}

/** Options of one view (`view(filter, options)`, `restrict(filter, options)`). */
export interface ToolViewOptions {
  /** A lower cap on one result's content than the registry's, in UTF-8 bytes (at least 1024). A higher one has no effect. */
  maxResultBytes?: number
}

function validateViewOptions(options: ToolViewOptions | undefined): void {
  if (options === undefined) return
  if (!options || typeof options !== 'object') throw new ToolError('INVALID_CONFIG', 'The view options must be an object such as { maxResultBytes: 65536 }.')
  if (options.maxResultBytes === undefined) return
  const problem = countProblem('maxResultBytes', options.maxResultBytes, { min: MIN_RESULT_BYTES })
  if (problem) throw new ToolError('INVALID_CONFIG', `The view option ${problem}`)
}

type Predicate = (name: string) => boolean

/** What a view passes on to the views made from it (`restrict`, `forDepth`). */
export interface Ceiling {
  visible: Predicate
  maxResultBytes: number
  callerDepth: number
}

function validateFilter(filter: ToolFilter): void {
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
 * its parent's predicate and its own filter: it can never see more than its parent. A view made
 * by `forDepth` also hides the tools meant for shallower agents (`Tool.maxCallerDepth`).
 */
export class ToolView {
  private readonly visible: Predicate
  /** This view's own result cap (the lowest along its `restrict` chain); the registry's applies too. */
  private readonly maxResultBytes: number
  /** The cap on one result's content, in UTF-8 bytes: the lower of the registry's and this view's (both fixed). */
  readonly resultCap: number
  /**
   * The depth of the agents this view is for (the deepest along its chain; 0 for a registry view).
   * A tool whose `maxCallerDepth` is below it is hidden exactly like a filtered one.
   */
  readonly callerDepth: number
  /** The last view `forDepth` made from this one. */
  private deeper?: ToolView
  /** Tools only this view (and the views `forDepth` makes from it) has, by name (see `with`). */
  private own?: ReadonlyMap<string, RegisteredTool>

  constructor(
    private readonly source: ToolSource,
    filter?: ToolFilter,
    parent?: Ceiling,
    options?: ToolViewOptions,
  ) {
    if (filter) validateFilter(filter)
    validateViewOptions(options)
    const own = toPredicate(filter)
    const above = parent?.visible
    this.visible = above && filter ? (name) => above(name) && own(name) : above ?? own
    this.maxResultBytes = Math.min(parent?.maxResultBytes ?? Infinity, options?.maxResultBytes ?? Infinity)
    this.callerDepth = parent?.callerDepth ?? 0
    this.resultCap = Math.min(source.maxResultBytes, this.maxResultBytes)
  }

  has(name: string): boolean {
    return !!this.lookUp(name)
  }

  names(): string[] {
    return this.list().map((spec) => spec.name)
  }

  list(): ToolSpec[] {
    const specs: ToolSpec[] = []
    const own = this.own
    for (const entry of this.source.entries.values()) {
      // Specs are deeply frozen at registration, so handing out the same objects is safe.
      if (!own?.has(entry.spec.name) && this.reaches(entry) && this.visible(entry.spec.name)) specs.push(entry.spec)
    }
    if (own) for (const entry of own.values()) specs.push(entry.spec)
    return specs
  }

  /**
   * This view plus one tool of its own that is not in the registry (e.g. the `ask_parent` tool a
   * provider gives each child): it shadows a registered tool of the same name, is kept by
   * `forDepth` (the agent's own view), and is not passed on by `restrict` (a child's ceiling).
   * Throws `INVALID_TOOL` for a malformed tool.
   */
  with(tool: Tool<any>): ToolView {
    const spec = checkTool(tool)
    const view = new ToolView(this.source, undefined, this.ceiling(this.callerDepth))
    const own = new Map(this.own)
    own.set(spec.name, { tool, spec })
    view.own = own
    return view
  }

  /** A narrower view: it sees no more tools, and gets no larger results, than this one. */
  restrict(filter: ToolFilter, options?: ToolViewOptions): ToolView {
    return new ToolView(this.source, filter, this.ceiling(this.callerDepth), options)
  }

  /**
   * This view as an agent at `depth` sees it (what `ctx.agents.create` gives every agent at depth
   * 1 or more): tools registered with a `maxCallerDepth` below `depth` are hidden, now and when
   * they are registered later. A view never gets shallower: a smaller `depth` than `callerDepth` changes nothing.
   */
  forDepth(depth: number): ToolView {
    if (!isCount(depth)) {
      throw new ToolError('INVALID_CONFIG', `forDepth() takes an agent depth (an integer >= 0), got ${String(depth)}.`)
    }
    if (depth <= this.callerDepth) return this
    // Siblings ask for the same depth: they share one view instead of one each.
    if (this.deeper?.callerDepth !== depth) {
      this.deeper = new ToolView(this.source, undefined, this.ceiling(depth))
      this.deeper.own = this.own
    }
    return this.deeper
  }

  private ceiling(callerDepth: number): Ceiling {
    return { visible: this.visible, maxResultBytes: this.maxResultBytes, callerDepth }
  }

  /** Whether an agent at this view's depth sees the tool at all (before any name filter). */
  private reaches(entry: RegisteredTool): boolean {
    return entry.maxCallerDepth === undefined || this.callerDepth <= entry.maxCallerDepth
  }

  /** The registered tool behind `name` when this view sees it. */
  private lookUp(name: string): RegisteredTool | undefined {
    const own = this.own?.get(name)
    if (own) return own
    if (!this.visible(name)) return undefined
    const entry = this.source.entries.get(name)
    return entry && this.reaches(entry) ? entry : undefined
  }

  /**
   * Runs one tool call. Never throws or rejects: every failure (unknown or filtered name,
   * aborted signal, invalid input, a throwing tool, a malformed result) is an `isError`
   * result the model can read. Every result's content, a failure's too, is capped at `resultCap`.
   */
  execute(call: ToolCall, exec: ToolExecContext): Promise<ToolResult> {
    // Not an async function: a call that waits on its tool (a delegation, for minutes) holds one
    // promise reaction here, not two suspended frames (a wide fan-out keeps thousands waiting).
    let name = '(unnamed)'
    try {
      name = typeof call?.name === 'string' ? call.name : String(call?.name)
      const entry = this.lookUp(name)
      if (!entry) {
        const available = this.names()
        return this.done({
          isError: true,
          content: `Unknown tool "${name}". Available tools: ${available.length ? available.join(', ') : '(none)'}.`,
        })
      }
      if ((exec?.abortScope ?? exec?.signal)?.aborted) return this.done(notRun(name))
      const parsed = parseInput(entry.tool.input, call.input ?? {})
      if (parsed instanceof Promise) {
        return parsed.then((later) => this.call(entry.tool, name, later, exec), (error) => this.done(failed(name, error)))
      }
      return this.call(entry.tool, name, parsed, exec)
    } catch (error) {
      return this.done(failed(name, error))
    }
  }

  /** Runs the tool on its parsed input; every way it ends is a capped result. */
  private call(tool: Tool, name: string, parsed: z.ZodSafeParseResult<unknown>, exec: ToolExecContext): Promise<ToolResult> {
    try {
      if (!parsed.success) return this.done({ isError: true, content: `Invalid input for tool "${name}":\n${z.prettifyError(parsed.error)}` })
      if ((exec?.abortScope ?? exec?.signal)?.aborted) return this.done(notRun(name))
      return Promise.resolve(tool.execute(parsed.data as Record<string, unknown>, exec)).then((result) => {
        try {
          return capResult(checkResult(tool, name, result), this.resultCap)
        } catch (error) {
          return capResult(failed(name, error), this.resultCap)
        }
      }, (error) => capResult(failed(name, error), this.resultCap))
    } catch (error) {
      return this.done(failed(name, error))
    }
  }

  private done(result: ToolResult): Promise<ToolResult> {
    return Promise.resolve(capResult(result, this.resultCap))
  }

  /**
   * Continues a call the tool suspended (`ToolResult.suspend`) with the answer to its question:
   * calls `tool.resume(answer, suspension, exec)`. Never throws or rejects, like `execute`: a tool
   * that is gone or hidden now, or has no `resume`, an aborted signal, or a throwing `resume` all
   * become an `isError` result. The result may suspend again.
   */
  async resume(call: ToolCall, answer: string, suspension: ToolSuspension, exec: ToolExecContext): Promise<ToolResult> {
    return capResult(await this.continueCall(call, answer, suspension, exec), this.resultCap)
  }

  /**
   * Continues a suspended call whose question was withdrawn (nobody waits for its answer any more):
   * calls `tool.withdrawn(suspension, exec)`. A tool without `withdrawn` gets an `isError` result
   * that says so; otherwise as `resume` (never throws or rejects; the result may suspend again).
   */
  async withdrawn(call: ToolCall, suspension: ToolSuspension, exec: ToolExecContext): Promise<ToolResult> {
    return capResult(await this.continueCall(call, undefined, suspension, exec), this.resultCap)
  }

  /** `answer` undefined: the question was withdrawn. */
  private async continueCall(
    call: ToolCall, answer: string | undefined, suspension: ToolSuspension, exec: ToolExecContext,
  ): Promise<ToolResult> {
    const name = typeof call?.name === 'string' ? call.name : String(call?.name)
    try {
      const entry = this.lookUp(name)
      if (!entry) return { isError: true, content: `Tool "${name}" is no longer available, so the question it asked cannot be answered.` }
      if (typeof entry.tool.resume !== 'function') return { isError: true, content: noResume(name) }
      if ((exec?.abortScope ?? exec?.signal)?.aborted) return { isError: true, content: `Tool "${name}" was not resumed: the call was aborted before it started.` }
      if (answer !== undefined) return checkResult(entry.tool, name, await entry.tool.resume(answer, suspension, exec))
      if (typeof entry.tool.withdrawn !== 'function') return { isError: true, content: withdrawnText(name, suspension) }
      return checkResult(entry.tool, name, await entry.tool.withdrawn(suspension, exec))
    } catch (error) {
      return { isError: true, content: `Tool "${name}" failed when resumed: ${describeError(error)}` }
    }
  }
}

function withdrawnText(name: string, suspension: ToolSuspension): string {
  const asked = JSON.stringify(headChars(String(suspension?.question?.text ?? ''), 200, '…'))
  return `Tool "${name}" got no answer: its question ${asked} was withdrawn (whoever asked it no longer waits for an answer), so the call ended without a result.`
}

function noResume(name: string): string {
  return `Tool "${name}" asked a question (suspend) but cannot be resumed (it has no resume method); the call failed. This is a bug in the tool.`
}

/** A tool's result as the caller may use it: malformed results, and suspensions nobody could resume, become errors. */
function notRun(name: string): ToolResult {
  return { isError: true, content: `Tool "${name}" was not run: the call was aborted before it started.` }
}

function failed(name: string, error: unknown): ToolResult {
  return { isError: true, content: `Tool "${name}" failed: ${describeError(error)}` }
}

function checkResult(tool: Tool, name: string, result: ToolResult): ToolResult {
  if (!result || typeof result !== 'object' || typeof result.content !== 'string') {
    return { isError: true, content: `Tool "${name}" returned an invalid result (expected { content: string }).` }
  }
  if (result.suspend !== undefined && typeof tool.resume !== 'function') return { isError: true, content: noResume(name) }
  return result
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

// The cap on one result's content (the view applies it where it executes a tool).

/**
 * Default cap on one tool result's `content`, in UTF-8 bytes: 100 KiB, about 25,000 tokens of
 * English or code. Several such results fit in a 128k-token context window beside the
 * conversation, and text that long is better asked for in parts.
 */
export const DEFAULT_MAX_RESULT_BYTES = 100 * 1024

/** Smallest cap accepted: room for some content besides the note. */
export const MIN_RESULT_BYTES = 1024

const encoder = new TextEncoder()

/**
 * The longest head of `text` within `maxBytes` UTF-8 bytes (never inside a character), as a new
 * string: a `slice` would keep the whole original alive behind it (V8 slices share the parent),
 * so a cut 100 MB result would still hold 100 MB.
 */
function freshHead(text: string, maxBytes: number): { head: string; bytes: number } {
  const buffer = new Uint8Array(maxBytes)
  const { written } = encoder.encodeInto(text, buffer)
  return { head: Buffer.from(buffer.buffer, buffer.byteOffset, written).toString('utf8'), bytes: written }
}

/** Bytes kept free at the end for the note (its numbers have at most 16 digits each). */
const NOTE_ROOM = 256

/**
 * `result` with its `content` cut to at most `maxBytes` UTF-8 bytes, on a character boundary,
 * with a note saying how much was cut; every other field (`isError`, `metadata`, `usage`, `work`)
 * is kept. Linear in the content's length and allocates only the kept head.
 */
export function capResult(result: ToolResult, maxBytes: number): ToolResult {
  const { content } = result
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most results need no measuring at all.
  if (content.length * 3 <= maxBytes) return result
  const total = Buffer.byteLength(content, 'utf8')
  if (total <= maxBytes) return result
  const { head, bytes } = freshHead(content, maxBytes - NOTE_ROOM)
  const cut = total - bytes
  const note = `\n[… cut ${cut} bytes of ${total}: the tool result cap is ${maxBytes} bytes; `
    + 'ask the tool for a smaller part (a range, a filter, a page) if you need the rest.]'
  return { ...result, content: head + note }
}
