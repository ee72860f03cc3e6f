import { SubagentError } from '../errors.js'
import type { RunRecord, SubagentProvider } from '../types.js'

/**
 * For a restore (`begin`'s `restore`): the provider with its `restore` of `record` in place of
 * `start`. One without `restore` rejects the start `UNSUPPORTED`, so the run's slots are released
 * as for any failed start.
 */
export function restoringProvider(provider: SubagentProvider, record: RunRecord): SubagentProvider {
  const restore = provider.restore
  return Object.assign(Object.create(provider) as SubagentProvider, {
    start: (providerRequest: Parameters<SubagentProvider['start']>[0]) => typeof restore === 'function'
      ? restore.call(provider, record, providerRequest)
      : Promise.reject(new SubagentError('UNSUPPORTED', `Provider "${provider.name}" cannot restore runs, so run ${record.runId} cannot be continued after a restart.`)),
  })
}
