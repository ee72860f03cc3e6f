import type { Context } from 'cordis'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/tools'
import { toolFilterProblem } from '@cordis-subagents/shared'
import { ClientLogs } from './client-logs.js'
import { Config } from './config.js'
import { ServeAcpError } from './errors.js'
import { loadSdk } from './sdk.js'
import { defaultStoreDir } from './session-store.js'
import { AcpServer } from './server.js'
import { claimStdio, holdExit, releaseStdio, serverSignals } from './stdio.js'

declare module 'cordis' {
  interface Events {
    /** The plugin was applied (its SDK loads next, then `serve-acp/ready`, or `serve-acp/failed`). */
    'serve-acp/applied'(): void
    /** The server could not start (the ACP SDK failed to load). */
    'serve-acp/failed'(error: Error): void
    /** The server is listening on its transport (`transport` is `stdio` or `custom`). */
    'serve-acp/ready'(info: { transport: 'stdio' | 'custom' }): void
    /** The client went away (its stream ended): the server serves nothing more until the plugin is reloaded (a reload serves again). */
    'serve-acp/closed'(info: { transport: 'stdio' | 'custom' }): void
  }
}

export const name = 'serve-acp'
export const inject = ['agents', 'tools']
const VERSION = '0.1.0'

export function apply(ctx: Context, config: Config) {
  checkConfig(config)
  const logger = ctx.logger('serve-acp')
  // What the client can make us log, under one budget; the ACP SDK's console is routed to it while the connection is open.
  const logs = new ClientLogs(logger)
  const owner = {}
  // stdio: the process's one pair of streams, served once the previous load's server let go of them.
  const claim = config.transport ? { transport: config.transport, handedOver: undefined } : claimStdio(owner)
  if (!claim) {
    throw new ServeAcpError('STDIO_TAKEN', 'serve-acp: another serve-acp plugin already serves on this process\'s stdin/stdout; load only one (or give each a `transport`).')
  }
  const kind = config.transport ? 'custom' as const : 'stdio' as const
  let server: AcpServer | undefined
  let disposed = false
  const storeDir = config.loadSession ? config.store ?? defaultStoreDir() : undefined

  const signal = (event: string, ...args: unknown[]) => { if (kind === 'stdio') serverSignals().emit(event, ...args) }
  ctx.emit('serve-acp/applied')
  signal('applied')
  ctx.effect(() => () => {
    disposed = true
    // The SDK's console stays routed until the connection is closed (the prompts in hand answered, within closeGrace).
    if (server) holdExit(server.close().finally(() => logs.close()))
    logs.flush()
    // The next load on stdio serves once this server let go of the streams (its agents may still be disposing).
    releaseStdio(owner, server?.released())
  })

  // The SDK is loaded lazily, so an app that loads this plugin but is never spoken to pays nothing at start.
  const starting = loadSdk().then(async (sdk) => {
    await claim.handedOver
    if (disposed) return
    server = new AcpServer({ ctx, config, sdk, logger, logs, version: VERSION }, storeDir)
    logs.open()
    const closed = server.serve(claim.transport, kind === 'stdio')
    ctx.emit('serve-acp/ready', { transport: kind })
    signal('ready')
    return closed.then(async () => {
      if (disposed) return
      logger.info('the ACP client closed the connection')
      // Nothing of a client that left runs on: its turns aborted, its sessions' agents disposed (the stdio bin then
      // stops the app; a transport of the host's own leaves the app running).
      await server?.close()
      logs.close()
      ctx.emit('serve-acp/closed', { transport: kind })
      signal('closed')
    })
  })
  starting.catch((error) => {
    logger.error('serve-acp could not start: %s', error instanceof Error ? error.message : String(error))
    const failure = error instanceof Error ? error : new Error(String(error))
    ctx.emit('serve-acp/failed', failure)
    signal('failed', failure)
  })
}

function checkConfig(config: Config) {
  if (config.tools) {
    const problem = toolFilterProblem(config.tools, 'config.tools', true)
    if (problem) throw new ServeAcpError('INVALID_CONFIG', `serve-acp: ${problem}`)
    if (config.tools.allow === undefined && !config.tools.deny?.length) {
      throw new ServeAcpError('INVALID_CONFIG', 'serve-acp: config.tools is empty. List tools under `allow` and/or `deny`, or remove `tools` to serve every tool.')
    }
  }
  if (config.transport !== undefined) {
    const { input, output } = config.transport as Partial<Config['transport'] & object>
    if (!(input instanceof ReadableStream) || !(output instanceof WritableStream)) {
      throw new ServeAcpError('INVALID_CONFIG', 'serve-acp: config.transport must be { input: ReadableStream, output: WritableStream } (web streams).')
    }
  }
}
