import { Context, type Lifecycle, type Logger, Schema, Service } from 'cordis'
import { count, countProblem, withoutCallerTracing } from '@cordis-subagents/shared'
import { ToolError } from './errors.js'
import type { Tool, ToolChange, ToolFilter, ToolInputSchema, ToolSpec } from './types.js'
import { DEFAULT_MAX_RESULT_BYTES, MIN_RESULT_BYTES, type RegisteredTool, type ToolSource, ToolView, type ToolViewOptions } from './view.js'
import { checkName, checkTool } from './tool-spec.js'

declare module 'cordis' {
  interface Context {
    tools: ToolRegistry
  }
  interface Events {
    'tools/changed'(name: string, change: ToolChange): void
  }
}

/** A name claimed ahead of its tool; the claim (and any tool under it) ends with the claimant's scope. */
export interface ToolReservation {
  readonly name: string
  /** Registers the tool under the reserved name; returns a function that unregisters it again. */
  register<S extends ToolInputSchema>(tool: Tool<S>): () => void
  dispose(): void
}

interface Entry extends RegisteredTool {
  owner: unknown
}

/**
 * `ctx.tools`: the tool registry. Registrations and reservations belong to the plugin that
 * made them and disappear when it is disposed or reloaded.
 */
export class ToolRegistry extends Service<ToolRegistry.Config> {
  static Config: Schema<ToolRegistry.Config> = Schema.object({
    maxResultBytes: count({ min: MIN_RESULT_BYTES }).default(DEFAULT_MAX_RESULT_BYTES)
      .description('Largest content of one tool result the model gets, in UTF-8 bytes (default 100 KiB); a longer one is cut with a note saying how much was cut. Applies to every tool.'),
  })

  private readonly entries = new Map<string, Entry>()
  private readonly reserved = new Map<string, unknown>()
  private readonly source: ToolSource
  /** The cap on one result's content, in UTF-8 bytes, for every view of this registry. */
  readonly maxResultBytes: number

  /** The app's event bus, resolved once: emitting through a caller's traced context costs far more. */
  private readonly events: Lifecycle
  private readonly log: Logger

  constructor(ctx: Context, config: ToolRegistry.Config = {}) {
    super(ctx, 'tools', true)
    this.config = config
    const maxResultBytes = config.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES
    const problem = countProblem('maxResultBytes', maxResultBytes, { min: MIN_RESULT_BYTES })
    if (problem) throw new ToolError('INVALID_CONFIG', `tools: config.${problem}`)
    this.maxResultBytes = maxResultBytes
    this.source = { entries: this.entries, maxResultBytes }
    this.events = withoutCallerTracing(ctx.lifecycle)
    this.log = ctx.logger('tools')
  }

  /** Registers a tool in the caller's scope. Throws `INVALID_TOOL` or `DUPLICATE_TOOL`. */
  register<S extends ToolInputSchema>(tool: Tool<S>): () => void {
    const { ctx } = this
    const self = withoutCallerTracing(this)
    const owner = ctx.scope
    return ctx.effect(() => {
      const spec = checkTool(tool)
      const holder = self.reserved.get(spec.name)
      if (holder !== undefined) {
        throw new ToolError('DUPLICATE_TOOL', holder === owner
          ? `Tool name "${spec.name}" is reserved by this plugin: register it through the reservation (reservation.register).`
          : `Tool name "${spec.name}" is reserved by another plugin; choose another name.`)
      }
      return self.add(tool as unknown as Tool, spec, owner)
    })
  }

  /** Claims a name in the caller's scope before its tool exists. Throws `DUPLICATE_TOOL` on conflict. */
  reserve(name: string): ToolReservation {
    const { ctx } = this
    // `this` is cordis' caller-tracing shadow here: the caller's scope is read from it once, and the
    // reservation's closures (a remount runs them on every provider reload) use the registry itself.
    const self = withoutCallerTracing(this)
    const owner = ctx.scope
    checkName(name)
    let release!: () => void
    let unregister: (() => void) | undefined
    let active = true
    const reservation: ToolReservation = {
      name,
      register: (tool) => {
        if (!active) throw new ToolError('INVALID_TOOL', `The reservation for "${name}" has been released.`)
        const spec = checkTool(tool)
        if (spec.name !== name) {
          throw new ToolError('INVALID_TOOL', `Reservation "${name}" cannot register a tool named "${spec.name}".`)
        }
        if (unregister) throw new ToolError('DUPLICATE_TOOL', `A tool is already registered under "${name}".`)
        const remove = self.add(tool as unknown as Tool, spec, owner)
        const dispose = () => {
          if (unregister !== dispose) return
          unregister = undefined
          remove()
        }
        unregister = dispose
        return dispose
      },
      dispose: () => release(),
    }
    release = ctx.effect(() => {
      const holder = self.reserved.get(name)
      if (holder !== undefined) {
        throw new ToolError('DUPLICATE_TOOL', holder === owner
          ? `Tool name "${name}" is already reserved by this plugin.`
          : `Tool name "${name}" is already reserved by another plugin; choose another name.`)
      }
      const existing = self.entries.get(name)
      if (existing && existing.owner !== owner) {
        throw new ToolError('DUPLICATE_TOOL', `Tool name "${name}" is already registered by another plugin; choose another name.`)
      }
      self.reserved.set(name, owner)
      return () => {
        active = false
        unregister?.()
        self.reserved.delete(name)
      }
    })
    return reservation
  }

  /** A live view of the registry, optionally filtered, optionally with a lower result cap. */
  view(filter?: ToolFilter, options?: ToolViewOptions): ToolView {
    return new ToolView(this.source, filter, undefined, options)
  }

  has(name: string): boolean {
    return this.entries.has(name)
  }

  list(): ToolSpec[] {
    return this.view().list()
  }

  private add(tool: Tool, spec: ToolSpec, owner: unknown): () => void {
    if (this.entries.has(spec.name)) {
      throw new ToolError('DUPLICATE_TOOL', `A tool named "${spec.name}" is already registered; choose another name.`)
    }
    const entry: Entry = { tool, spec, owner }
    if (tool.maxCallerDepth !== undefined) entry.maxCallerDepth = tool.maxCallerDepth
    this.entries.set(spec.name, entry)
    this.announce(spec.name, 'added')
    return () => {
      if (this.entries.get(spec.name) !== entry) return
      this.entries.delete(spec.name)
      this.announce(spec.name, 'removed')
    }
  }

  private announce(name: string, change: ToolChange) {
    try {
      this.events.emit('tools/changed', name, change)
    } catch (error) {
      this.log.warn('a tools/changed listener threw: %s', error)
    }
  }
}

export namespace ToolRegistry {
  export interface Config {
    /** Largest content of one tool result, in UTF-8 bytes (at least 1024; default 100 KiB). */
    maxResultBytes?: number
  }
}
