// ctx.agentDefinitions: the named agents every entry (cordis.yml / koishi.yml, a .claude/agents
// directory) registered, in the caller's scope like providers: unloading or reloading an entry
// removes its agents, and `agent-definitions/changed` tells the team tools to re-derive themselves.
import { Context, Service } from 'cordis'
import { emitIsolated } from '@cordis-subagents/shared'
import { checkTeams } from './check.js'
import { DefinitionError } from './errors.js'
import type { AgentDefinition } from './types.js'

declare module 'cordis' {
  interface Context {
    agentDefinitions: AgentDefinitions
  }
  interface Events {
    /** Agents were defined or removed (their names, sorted); a team tool re-derives its description and names. */
    'agent-definitions/changed'(names: string[]): void
  }
}

export class AgentDefinitions extends Service {
  private readonly definitions = new Map<string, AgentDefinition>()
  private readonly served = new Map<string, string>()
  private readonly log

  constructor(ctx: Context) {
    super(ctx, 'agentDefinitions', true)
    this.log = ctx.logger('agent-definitions')
  }

  /**
   * Registers one entry's definitions together, in the caller's scope (its unload removes them):
   * all or none. Throws `DUPLICATE_AGENT` for a name defined already, `UNKNOWN_TEAM_MEMBER` and
   * `TEAM_CYCLE` from the team checks (members may be in `definitions` or defined before).
   */
  define(definitions: readonly AgentDefinition[]): () => void {
    const names = definitions.map((definition) => definition.name)
    const dispose = this.ctx.effect(() => {
      const seen = new Set<string>()
      for (const definition of definitions) {
        const taken = this.definitions.get(definition.name)
        if (taken || seen.has(definition.name)) {
          throw new DefinitionError('DUPLICATE_AGENT', `Agent "${definition.name}" (${definition.source}) is defined already (${taken?.source ?? definition.source}); give one of them another name.`)
        }
        seen.add(definition.name)
      }
      checkTeams(definitions, this.definitions)
      for (const definition of definitions) this.definitions.set(definition.name, definition)
      return () => {
        for (const definition of definitions) {
          if (this.definitions.get(definition.name) === definition) this.definitions.delete(definition.name)
        }
        this.changed(names)
      }
    })
    this.changed(names)
    return dispose
  }

  /**
   * Records that the team tool `toolName` serves `agent`'s team, in the caller's scope. A team tool
   * hides every other team tool from the children it starts (`teamTools()`), so a child sees a
   * delegation tool only when one serves its own definition's team.
   */
  serveTeam(agent: string, toolName: string): () => void {
    return this.ctx.effect(() => {
      this.served.set(toolName, agent)
      return () => {
        if (this.served.get(toolName) === agent) this.served.delete(toolName)
      }
    })
  }

  /** The team tools loaded now: tool name → the agent whose team it serves. */
  teamTools(): ReadonlyMap<string, string> {
    return this.served
  }

  get(name: string): AgentDefinition | undefined {
    return this.definitions.get(name)
  }

  /** Every definition, sorted by name. */
  list(): AgentDefinition[] {
    return [...this.definitions.values()].sort((a, b) => compare(a.name, b.name))
  }

  /**
   * The members of `name`'s team that are defined now, sorted by name (a member whose entry was
   * unloaded since is left out until it returns). Empty for an unknown agent or one without a team.
   */
  team(name: string): AgentDefinition[] {
    const members: AgentDefinition[] = []
    for (const member of this.definitions.get(name)?.team ?? []) {
      const definition = this.definitions.get(member)
      if (definition) members.push(definition)
    }
    return members
  }

  /** The agents `name` can reach through teams (the transitive closure), itself first, then sorted. */
  reachable(name: string): AgentDefinition[] {
    const start = this.definitions.get(name)
    if (!start) return []
    const found = new Map<string, AgentDefinition>([[name, start]])
    const queue = [start]
    for (let next = queue.shift(); next; next = queue.shift()) {
      for (const member of this.team(next.name)) {
        if (found.has(member.name)) continue
        found.set(member.name, member)
        queue.push(member)
      }
    }
    return [start, ...[...found.values()].slice(1).sort((a, b) => compare(a.name, b.name))]
  }

  private changed(names: string[]): void {
    emitIsolated(this.ctx, 'agent-definitions/changed', [[...names].sort(compare)], (error) => this.log.warn('an agent-definitions/changed listener failed: %s', error))
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
