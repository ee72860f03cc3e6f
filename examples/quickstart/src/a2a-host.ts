import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Context, Schema, Service } from 'cordis'
import { ChildWarnings, choice, duration, type EnvInherit, envProblem, policyEnv } from '@cordis-subagents/shared'

declare module 'cordis' {
  interface Context {
    quickstartA2a: QuickstartA2a
  }
}

export interface Config {
  root?: string
  startupTimeout: number
  killGrace: number
  inherit: EnvInherit
  envExclude: string[]
  env: Record<string, string | boolean>
}

/**
 * What the server needs of this process's environment beyond `inherit: core`: the model choice and
 * its key, where spans go, the demo model's pace. Passed by name (`true`), like provider-acp's `env`.
 */
const SERVER_ENV: Record<string, boolean> = {
  OPENAI_API_KEY: true,
  OPENAI_BASE_URL: true,
  OPENAI_MODEL: true,
  OTEL_EXPORTER_OTLP_ENDPOINT: true,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: true,
  OTEL_EXPORTER_OTLP_HEADERS: true,
  QUICKSTART_TRACE_FILE: true,
  QUICKSTART_DEMO_DELAY: true,
}

export const Config: Schema<Config> = Schema.object({
  root: Schema.string().description('Workspace the served agent reads (its tools are confined to it). Default: the app\'s working directory.'),
  startupTimeout: duration({ min: 1 }).default(20_000).description('Milliseconds for the server to start listening.'),
  killGrace: duration().default(3_000).description('Milliseconds between SIGTERM and SIGKILL when the plugin stops.'),
  inherit: choice({
    core: 'Only PATH, HOME, USER, LANG, LC_*, TERM, TMPDIR, TZ, XDG_*, npm/Node settings and proxies',
    all: 'This process\'s whole environment, minus excluded names',
    none: 'Nothing: only `env`',
  }).default('core').description('Which of this process\'s environment variables the server inherits (provider-acp\'s env policy). Credentials (*KEY*, *TOKEN*, *SECRET*, *PASS*, …) are never inherited.'),
  envExclude: Schema.array(String).default([]).description('More variable names never inherited, as case-insensitive globs.'),
  env: Schema.dict(Schema.union([String, Boolean])).default(SERVER_ENV)
    .description('Environment changes for the server, after `inherit` and `envExclude`: a string sets, `true` passes this process\'s value through, `false` removes. Default: the model, telemetry and demo settings by name.'),
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
    const problem = envProblem(this.config.env)
    if (problem) throw new Error(`a2a-host: config.${problem}`)
  }

  protected override async start() {
    const script = fileURLToPath(new URL('../lib/a2a-server.js', import.meta.url))
    const args = [script, '--exit-with-stdin', ...this.config.root ? ['--root', this.config.root] : []]
    // Its stdin is ours: if this process dies without stopping it, the pipe closes and it exits.
    const { inherit, envExclude: exclude, env: set } = this.config
    const env = policyEnv(process.env, { inherit, exclude, set })
    const child = this.child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env })
    this.pid = child.pid
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk).slice(-2048) })
    // A warning the server meant for us (a failed trace export) is repeated, never left in its stderr.
    const logger = this.ctx.logger('quickstart-a2a')
    const warnings = new ChildWarnings((line) => logger.warn('the A2A server (pid %s) warns: %s', child.pid ?? '-', line))
    child.stderr!.on('data', (chunk: Buffer) => warnings.push(chunk))
    child.stderr!.once('end', () => warnings.end())
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
