import type { Context, Logger } from 'cordis'
import { z } from 'zod'
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import type { Tool, ToolResult } from '@cordis-subagents/tools'
import { describeError, headChars, peerLine, peerText } from '@cordis-subagents/shared'
import type { Connection } from './connection.js'
import { type ResultBounds, toToolResult } from './convert.js'
import { mountedName } from './names.js'
import { peerSchema } from './peer-schema.js'
import { quotedError, quotedName, Skips } from './skips.js'

/** Longest description kept from a server (characters: UTF-16 code units, never half a surrogate pair). */
const MAX_DESCRIPTION_CHARS = 4096
/** Largest input schema accepted from a server (characters of JSON); a larger tool is skipped. */
const MAX_SCHEMA_CHARS = 64 * 1024

export interface MountOptions {
  server: string
  allow?: readonly string[]
  deny: readonly string[]
  maxTools: number
  callTimeout: number
  bounds: ResultBounds
}

interface Mounted {
  /** What the tool was built from: a changed listing re-registers it. */
  key: string
  /** The server's own name of the tool. */
  remote: string
  dispose(): void
}

/**
 * The server's tools in `ctx.tools`, kept in step with its listing: `sync` adds new tools,
 * removes gone ones and re-registers changed ones. Registrations are made in the load's scope,
 * so unloading removes them all.
 */
export class ToolMount {
  private readonly mounted = new Map<string, Mounted>()

  constructor(
    private readonly ctx: Context,
    private readonly connection: Connection,
    private readonly options: MountOptions,
    private readonly log: Logger,
  ) {}

  /** Our names of the mounted tools. */
  names(): string[] {
    return [...this.mounted.keys()]
  }

  /**
   * Mounts the tools of one listing. What it skips (see the README's Naming) is logged as one warning for the listing,
   * by kind, with the first of each kind quoted by a cut head of its name: never a line per tool, nor a whole long name.
   */
  sync(tools: readonly McpTool[]) {
    const skips = new Skips()
    const wanted = new Map<string, { key: string; tool: McpTool }>()
    for (let i = 0; i < tools.length; i++) {
      const tool = tools[i]
      if (!this.admitted(tool.name)) continue
      const named = mountedName(this.options.server, tool.name)
      if ('skip' in named) {
        // Skipped on its length: only a head of the name is read, once per kind and listing.
        skips.add(named.skip, () => `${quotedName(tool.name)} (${typeof tool.name === 'string' ? tool.name.length : 0} characters)`)
        continue
      }
      if (wanted.has(named.name)) {
        skips.add('duplicate', () => `${quotedName(tool.name)} as ${named.name}`)
        continue
      }
      if (wanted.size >= this.options.maxTools) {
        skips.add('max-tools', () => quotedName(tool.name), tools.length - i)
        break
      }
      wanted.set(named.name, { key: JSON.stringify([tool.name, tool.description ?? '', tool.inputSchema, tool.execution?.taskSupport ?? null]), tool })
    }
    for (const [name, entry] of this.mounted) {
      if (wanted.get(name)?.key !== entry.key) {
        this.mounted.delete(name)
        entry.dispose()
      }
    }
    for (const [name, { key, tool }] of wanted) {
      if (this.mounted.has(name)) continue
      if (key.length > MAX_SCHEMA_CHARS) {
        skips.add('too-large', () => quotedName(tool.name))
        continue
      }
      try {
        const dispose = this.ctx.tools.register(this.toTool(name, tool))
        this.mounted.set(name, { key, remote: tool.name, dispose })
      } catch (error) {
        skips.add('refused', () => `${name}: ${quotedError(error)}`)
      }
    }
    const { server, maxTools } = this.options
    const line = skips.line(tools.length, { server, maxTools, maxSchemaChars: MAX_SCHEMA_CHARS })
    if (line) this.log.warn('%s', line)
  }

  unmountAll() {
    for (const entry of this.mounted.values()) entry.dispose()
    this.mounted.clear()
  }

  private admitted(remote: string): boolean {
    const { allow, deny } = this.options
    return (!allow || allow.includes(remote)) && !deny.includes(remote)
  }

  private toTool(name: string, tool: McpTool): Tool {
    return mcpTool(name, tool, this.connection, this.options, this.log)
  }
}

/** One tool of a connected server as a tool of ours, named `name`: its schema and description cleaned, its calls bounded. */
export function mcpTool(
  name: string, tool: McpTool, connection: Connection, options: Pick<MountOptions, 'server' | 'callTimeout' | 'bounds'>, log: Logger,
): Tool {
  // What the server says about its tool reaches a model and a person: cleaned by the shared rule.
  const parameters = peerSchema(objectSchema(tool.inputSchema))
  const said = peerText(String(tool.description ?? '')).trim() || peerLine(String(tool.title ?? '')).trim()
  const description = headChars(said || `The ${name} tool of the MCP server ${options.server}.`, MAX_DESCRIPTION_CHARS)
  // A reason quotes the server's own schema text (a reference, a pattern): cleaned before it reaches a terminal.
  const check = connection.schemaCheck(parameters, (reason) => log.warn('%s: tool %s: %s', options.server, name, peerLine(reason)))
  return {
    name,
    description,
    input: z.looseObject({}).superRefine((value, ctx) => {
      for (const { path, message } of check(value)) ctx.addIssue({ code: 'custom', path, message })
    }),
    parameters,
    async execute(input, exec): Promise<ToolResult> {
      try {
        const result = await connection.call(tool.name, input as Record<string, unknown>, {
          signal: exec.signal,
          timeout: options.callTimeout,
          task: tool.execution?.taskSupport === 'required',
          onProgress: exec.onUpdate && ((p) => exec.onUpdate!({
            kind: 'progress',
            text: p.message ? peerLine(headChars(p.message, 1024)) : undefined,
            data: { progress: p.progress, total: p.total },
          })),
        })
        return toToolResult(result, options.bounds)
      } catch (error) {
        return { isError: true, content: `MCP tool ${options.server}/${tool.name} failed: ${describeError(error)}` }
      }
    },
  }
}

function objectSchema(schema: unknown): Record<string, unknown> {
  const given = schema && typeof schema === 'object' && !Array.isArray(schema) ? schema as Record<string, unknown> : {}
  return given.type === 'object' ? given : { type: 'object' }
}
