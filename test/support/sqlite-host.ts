// A host on a real SQLite file under checkpoints, its store ready (test code only): the start every durable spec of a
// restart makes; `options.before` loads the rest (a provider, tools, models, listeners).
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { serviceOf } from '../../packages/checkpoints/tests/support.js'
import { type Host, type HostOptions, startHost } from './host.js'

/** Starts a host whose checkpoints store (named `hostName`) writes `file`, and waits until the store is ready. */
export async function sqliteHost(file: string, hostName: string, options: HostOptions = {}): Promise<Host> {
  const host = await startHost({
    ...options,
    before(ctx: Context) {
      ctx.plugin(Database as never)
      ctx.plugin(SQLiteDriver, { path: file })
      ctx.plugin(Checkpoints, { host: hostName })
      options.before?.(ctx)
    },
  })
  await serviceOf(host.ctx, 'checkpoints')
  return host
}
