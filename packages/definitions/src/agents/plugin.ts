import { Context, Schema } from 'cordis'
import { checkDefinition } from '../check.js'
import { DefinitionSchema } from '../schema.js'
import type { DefinitionInput } from '../types.js'

export const name = 'agent-definitions-agents'
export const reusable = true
export const inject = ['agentDefinitions']

export interface Config {
  agents: Record<string, DefinitionInput>
}

export const Config: Schema<Config> = Schema.object({
  agents: Schema.dict(DefinitionSchema).default({}).description('Named agent definitions, by name.'),
})

/**
 * Registers this entry's agents together: a bad one (invalid field, missing soul file, unknown team
 * member, unbounded team cycle, taken name) fails the whole entry at load with its code, and a
 * reload (a config edit) replaces them all.
 */
export function apply(ctx: Context, config: Config) {
  const baseDir = ctx.baseDir ?? process.cwd()
  const definitions = Object.entries(config.agents ?? {}).map(([agent, input]) => checkDefinition(agent, input, 'config', baseDir))
  ctx.agentDefinitions.define(definitions)
  ctx.logger('agent-definitions').debug('defined %s', definitions.map((definition) => definition.name).join(', ') || 'no agents')
}
