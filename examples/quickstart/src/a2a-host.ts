import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Context, Schema, Service } from 'cordis'
import { duration } from '@cordis-subagents/shared'

declare module 'cordis' {
  interface Context {
    quickstartA2a: QuickstartA2a
  }
}

export interface Config {
  root?: string
  startupTimeout: number
  killGrace: number
}

export const Config: Schema<Config> = Schema.object({
  root: Schema.string().description('Workspace the served agent reads (its tools are confined to it). Default: the app\'s working directory.'),
  startupTimeout: duration({ min: 1 }).default(20_000).description('Milliseconds for the server to start listening.'),
  killGrace: duration().default(3_000).description('Milliseconds between SIGTERM and SIGKILL when the plugin stops.'),
})

/**
 * `a2a-host`: runs the quick start's A2A server (lib/a2a-server.js: the app of a2a-server.yml,
 * served by @cordis-subagents/serve-a2a) as a child process on 127.0.0.1 (a free port), and
 * provides `ctx.quickstartA2a.url` and `.token` (the bearer token that server generated for this
 * start, read from its private stdout pipe) once it listens, so a provider-a2a entry can use it
 * (`inject: [quickstartA2a]`, `url: !!js "get('quickstartA2a').url"`, `bearerToken: !!js "get('quickstartA2a').token"`).
 * The server process goes with the plugin: SIGTERM, then SIGKILL after `killGrace`.
 */
export class QuickstartA2a extends Service<Config> {
  static Config = Config
  /** The server's base URL (its agent card is at /.well-known/agent-card.json). */
  url = ''
  /** The server's bearer token for this start (never logged). */
  token = ''
  /** The server process's pid (while it runs). */
  pid?: number
  private child?: ChildProcess

  constructor(ctx: Context, config?: Partial<Config>) {
    super(ctx, 'quickstartA2a')
    this.config = Config(config as Config)
  }

  protected override async start() {
    const script = fileURLToPath(new URL('../lib/a2a-server.js', import.meta.url))
    const args = [script, '--exit-with-stdin', ...this.config.root ? ['--root', this.config.root] : []]
    // Its stdin is ours: if this process dies without stopping it, the pipe closes and it exits.
    const child = this.child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env: process.env })
    this.pid = child.pid
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk).slice(-2048) })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const listening = await new Promise<{ url: string; token: string }>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => reject(new Error(`the A2A server did not start within ${this.config.startupTimeout} ms`)), this.config.startupTimeout)
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk
        if (out.length > 4096) out = out.slice(-4096)
        const line = /^\{"url":"(http:\/\/127\.0\.0\.1:\d+)","token":"([A-Za-z0-9_-]{16,128})"\}$/m.exec(out)
        if (line) {
          clearTimeout(timer)
          resolve({ url: line[1], token: line[2] })
        }
      })
      void exited.then(() => {
        clearTimeout(timer)
        reject(new Error(`the A2A server exited before it listened (code ${child.exitCode}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`))
      })
    }).catch(async (error) => {
      await this.stopChild()
      throw error
    })
    this.url = listening.url
    this.token = listening.token
  }

  protected override stop() {
    return this.stopChild()
  }

  private async stopChild() {
    const child = this.child
    this.child = undefined
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), this.config.killGrace)
    await exited
    clearTimeout(timer)
  }
}

export default QuickstartA2a
