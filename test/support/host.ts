// The host every package's tests start: a real Context with the real services (test code only).
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService, { type Config as SubagentConfig } from '@cordis-subagents/subagents-service'
import { tick } from './async.js'
import { stopApp } from './stop-app.js'
import { captureLogs, type LogRecord } from './logs.js'

export interface HostOptions {
  /** Config of the tool registry (e.g. a larger `maxResultBytes` for a test of a later cap). */
  tools?: ConstructorParameters<typeof ToolRegistry>[1]
  agents?: AgentRuntime.Config
  subagents?: Partial<SubagentConfig>
  /** Record every log line (debug included) instead of printing it, until `stop()`. */
  captureLogs?: boolean
  /** Runs after the services are loaded and before the Context starts (plugins, listeners). */
  before?(ctx: Context): void
}

export interface Host {
  ctx: Context
  /** Every `internal/error` cordis reported. */
  errors: unknown[]
  /** Captured log records (empty unless `captureLogs`). */
  logs: LogRecord[]
  /** Stops the Context once and restores the loggers. */
  stop(): Promise<void>
}

/** A started Context with the real `ctx.tools`, `ctx.agents` and `ctx.subagents`. */
export async function startHost(options: HostOptions = {}): Promise<Host> {
  const capture = options.captureLogs ? captureLogs() : undefined
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.plugin(ToolRegistry, options.tools ?? {})
  ctx.plugin(AgentRuntime, options.agents ?? {})
  ctx.plugin(SubagentService, options.subagents ?? {})
  options.before?.(ctx)
  await ctx.start()
  await ctx.lifecycle.flush()
  let stopped = false
  return {
    ctx,
    errors,
    logs: capture?.records ?? [],
    async stop() {
      if (stopped) return
      stopped = true
      await stopApp(ctx)
      await tick()
      capture?.restore()
    },
  }
}
