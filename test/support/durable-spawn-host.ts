// The host the restart specs start: a real SQLite file under checkpoints, spawn, the `child` model and a
// `block` tool that waits until its call is aborted, so a child can be left mid-turn (test code only).
import { z } from 'zod'
import type { Context, ForkScope } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import type { GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { serviceOf } from '../../packages/checkpoints/tests/support.js'
import { type Host, startHost } from './host.js'

/** The text of the request's last user message. */
export const lastUser = (request: GenerateRequest) => String([...request.messages].reverse().find((message) => message.role === 'user')?.content ?? '')

/** Starts the host (pushed to `hosts`, its store's scope to `stores`) and waits for its checkpoints service. */
export interface DurableSpawnHostOptions {
  file: string
  hostName: string
  model: ScriptedModel
  hosts: Host[]
  stores?: ForkScope[]
}

export async function durableSpawnHost(options: DurableSpawnHostOptions): Promise<Host> {
  const host = await startHost({
    before(ctx: Context) {
      ctx.plugin(Database as never)
      ctx.plugin(SQLiteDriver, { path: options.file })
      options.stores?.push(ctx.plugin(Checkpoints, { host: options.hostName }))
      ctx.tools.register({
        name: 'block', description: 'waits until aborted', input: z.strictObject({}),
        execute: (_input, exec) => new Promise((resolve) => exec.signal.addEventListener('abort', () => resolve({ content: 'stopped' }), { once: true })),
      })
      ctx.agents.registerModel('child', options.model)
      ctx.plugin(Spawn as never, { name: 'spawn' })
    },
  })
  options.hosts.push(host)
  await serviceOf(host.ctx, 'checkpoints')
  return host
}
