import type { ScopedCeiling } from '@cordis-subagents/shared'
import type { ToolView } from '@cordis-subagents/tools'

/**
 * The tool ceiling a parent host of ours put in this process's environment (`SUBAGENT_ALLOWED_TOOLS`
 * with its nonce `SUBAGENT_CROSSING_FOR`). Held until `bind` hears the nonce from the parent's ACP
 * `initialize`, so only the direct child applies it, never a process its environment reached
 * further down (an MCP server a third-party agent started).
 */
export class RootCeiling {
  /** The bound ceiling; undefined until `bind` hears the nonce (a field: a root agent's creation reads it, no call). */
  tools?: readonly string[]

  constructor(private readonly scoped: ScopedCeiling | undefined) {}

  /** Applies the ceiling when `nonce` is its nonce; returns whether a ceiling applies now. */
  bind(nonce: unknown): boolean {
    if (this.scoped && typeof nonce === 'string' && nonce === this.scoped.for) this.tools = this.scoped.allowedTools
    return this.tools !== undefined
  }

  /** `view` under the ceiling, when one is bound. */
  apply(view: ToolView): ToolView {
    return this.tools ? view.restrict({ allow: [...this.tools] }) : view
  }
}
