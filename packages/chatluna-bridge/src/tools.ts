import type { Context } from 'cordis'
import { randomUUID } from 'node:crypto'
import { DynamicStructuredTool, type StructuredToolInterface } from '@langchain/core/tools'
import type { ToolSpec } from '@cordis-subagents/tools'
import type { ChatLunaServiceLike, ChatLunaToolEntry } from './chatluna.js'
import { type CallOptions, runDelegation } from './tool-call.js'

/** A delegation tool's model-facing input: `{ description, prompt }`, plus `agent` for a team's tool. */
function isDelegationInput(parameters: Record<string, unknown>): boolean {
  const properties = parameters.properties as Record<string, unknown> | undefined
  return !!properties && 'description' in properties && 'prompt' in properties
}

/** `subagent*` style patterns: a trailing `*` matches any rest of the name, otherwise the name itself. */
export function matchesPattern(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern))
}

interface Registered {
  entry: ChatLunaToolEntry
  /** Aborts the calls of this tool that run now (the tool left ctx.tools, or the bridge unloads). */
  controller: AbortController
  unregister: () => void
}

/**
 * Our delegation tools as ChatLuna tools, following ctx.tools: a matching tool is registered with
 * ChatLuna's platform when it appears (its provider loaded) and unregistered when it goes (the
 * provider or the tool plugin unloaded, a reload's remove half), so ChatLuna's agent sees exactly the
 * delegation tools that exist now. Unloading the bridge unregisters all of them and aborts their calls.
 */
export class ChatLunaTools {
  private readonly registered = new Map<string, Registered>()

  constructor(
    private readonly ctx: Context,
    private readonly chatluna: ChatLunaServiceLike,
    private readonly patterns: readonly string[],
    private readonly options: CallOptions,
  ) {}

  start() {
    // First: whatever is registered below goes when the bridge does, even if a later registration throws.
    this.ctx.on('dispose', () => {
      for (const name of [...this.registered.keys()]) this.remove(name)
    })
    this.ctx.on('tools/changed', (name, change) => {
      if (change === 'removed') this.remove(name)
      else this.add(name)
    })
    for (const spec of this.ctx.tools.list()) this.add(spec.name)
  }

  /** Names registered with ChatLuna now. */
  names(): string[] {
    return [...this.registered.keys()]
  }

  private spec(name: string): ToolSpec | undefined {
    return this.ctx.tools.view({ allow: [name] }).list()[0]
  }

  private add(name: string) {
    if (this.registered.has(name) || !matchesPattern(name, this.patterns)) return
    const spec = this.spec(name)
    if (!spec || !isDelegationInput(spec.parameters)) return
    const controller = new AbortController()
    const entry: ChatLunaToolEntry = {
      name,
      description: spec.description,
      createTool: () => this.langChainTool(name, controller.signal),
      selector: () => true,
      meta: { source: 'extension', group: 'cordis-subagents', tags: ['subagent', 'delegation'] },
    }
    const { platform } = this.chatluna
    let unregister: () => void
    try {
      unregister = platform.registerTool(name, entry)
    } catch (error) {
      // ChatLuna stores the tool, then tells its listeners (Koishi passes a listener's throw on): kept as ours when it is
      // stored, so it is unregistered when it goes; not stored, the registration failed as a whole.
      if (platform.getTool(name).id !== entry.id) throw error
      unregister = () => platform.unregisterTool(name)
    }
    this.registered.set(name, { entry, controller, unregister })
  }

  private remove(name: string) {
    const registered = this.registered.get(name)
    if (!registered) return
    this.registered.delete(name)
    registered.controller.abort(new Error(`The tool "${name}" left ctx.tools (its provider or plugin unloaded).`))
    // Another plugin may have taken the name in ChatLuna since; leave its tool alone.
    if (this.chatluna.platform.getTool(name).id === registered.entry.id) registered.unregister()
  }

  /** The LangChain tool ChatLuna's agent calls: the spec of the moment (description and schema re-read at each creation). */
  private langChainTool(name: string, ours: AbortSignal): StructuredToolInterface {
    const spec = this.spec(name)
    return new DynamicStructuredTool({
      name,
      description: spec?.description ?? '',
      // A copy: ctx.tools hands out frozen schemas, and LangChain's JSON Schema validator marks the one it gets.
      schema: structuredClone(spec?.parameters ?? { type: 'object', properties: {} }) as Record<string, unknown>,
      func: async (input: Record<string, unknown>, _run, config) => {
        const id = (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id ?? `chatluna-${randomUUID()}`
        const result = await runDelegation(this.ctx, this.options, { name, input, id }, { chatluna: config?.signal, ours })
        return result.content
      },
    }) as unknown as StructuredToolInterface
  }
}
