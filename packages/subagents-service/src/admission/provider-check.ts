import { isName, isObject, NAME_RULE } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type { SubagentProvider } from '../types.js'

// A provider's descriptor checked when it registers (off the road of a delegation).

function invalidProvider(message: string): never {
  throw new SubagentError('INVALID_PROVIDER', message)
}

export function checkProvider(provider: SubagentProvider) {
  if (!isObject(provider)) invalidProvider('A subagent provider must be an object.')
  const { name } = provider
  if (!isName(name)) {
    invalidProvider(`Invalid subagent provider name ${JSON.stringify(name)}: use ${NAME_RULE}.`)
  }
  if (provider.description !== undefined && typeof provider.description !== 'string') {
    invalidProvider(`Subagent provider "${name}": description must be a string when present.`)
  }
  const { capabilities } = provider
  if (!isObject(capabilities)) {
    invalidProvider(`Subagent provider "${name}": capabilities must be an object { persona, toolFilter, depthLimit } of booleans.`)
  }
  for (const key of ['persona', 'toolFilter', 'depthLimit'] as const) {
    if (typeof capabilities[key] !== 'boolean') {
      invalidProvider(`Subagent provider "${name}": capabilities.${key} must be a boolean.`)
    }
  }
  if (typeof provider.inheritsParentContext !== 'boolean') {
    invalidProvider(`Subagent provider "${name}": inheritsParentContext must be a boolean.`)
  }
  if (typeof provider.start !== 'function') {
    invalidProvider(`Subagent provider "${name}": start must be a function returning a promise of a run.`)
  }
}
