import { Context, Schema } from 'cordis'
import { duration } from '@cordis-subagents/shared'
import { checkDefinition } from '../check.js'
import { DefinitionSchema } from '../schema.js'
import type { DefinitionInput } from '../types.js'

export const name = 'agent-definitions-agents'
export const reusable = true
export const inject = ['agentDefinitions']

export interface Config {
  agents: Record<string, DefinitionInput>
  teamWait: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  agents: Schema.dict(DefinitionSchema).default({}).description('Named agent definitions, by name.'),
  teamWait: duration().default(10_000).description('Milliseconds this entry waits at load for team members that other entries define (the loader applies entries in any order) before it fails with UNKNOWN_TEAM_MEMBER; 0: fail at once.'),
})

/**
 * Registers this entry's agents together: a bad one (invalid field, missing soul file, unknown team
 * member, unbounded team cycle, taken name) fails the whole entry at load with its code, and a
 * reload (a config edit) replaces them all.
 */
export async function apply(ctx: Context, config: Config) {
  const baseDir = ctx.baseDir ?? process.cwd()
  const definitions = Object.entries(config.agents ?? {}).map(([agent, input]) => checkDefinition(agent, input, 'config', baseDir))
  const own = new Set(definitions.map((definition) => definition.name))
  const unknown = (member: string) => !own.has(member) && !ctx.agentDefinitions.get(member)
  const missing = () => definitions.some((definition) => definition.team.some(unknown))
  if (missing() && config.teamWait > 0) {
    // Disposed meanwhile (an unload, or a config edit that applies this entry again): this apply is over, whatever the
    // scope reads now (a restarted scope is active again, for the new apply).
    if (await waitFor(ctx, () => !missing(), config.teamWait) === 'disposed') return
  }
  // Still missing after the wait: define() refuses the entry with UNKNOWN_TEAM_MEMBER, naming the agents there are.
  ctx.agentDefinitions.define(definitions)
  ctx.logger('agent-definitions').debug('defined %s', definitions.map((definition) => definition.name).join(', ') || 'no agents')
}

/** Resolves `ready` once `ready()` holds after a definitions change, `timeout` after `ms`, `disposed` when the entry is disposed. */
function waitFor(ctx: Context, ready: () => boolean, ms: number): Promise<'ready' | 'timeout' | 'disposed'> {
  return new Promise((resolve) => {
    const done = (value: 'ready' | 'timeout' | 'disposed') => {
      clearTimeout(timer)
      stopListening()
      stopDispose()
      resolve(value)
    }
    const timer = setTimeout(() => done('timeout'), ms)
    const stopListening = ctx.on('agent-definitions/changed', () => { if (ready()) done('ready') })
    const stopDispose = ctx.on('dispose', () => done('disposed'))
  })
}
