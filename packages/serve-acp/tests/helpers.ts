// A served app started the way acpx or Zed start it: the bin (built lib/) with a cordis.yml,
// driven by the ACP SDK's client side over the process's stdin/stdout.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import * as sdk from '@agentclientprotocol/sdk'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const BIN = join(ROOT, 'packages/serve-acp/lib/bin.js')
export const PARTS = join(ROOT, 'packages/serve-acp/tests/fixtures/served-parts.mjs')

/** Builds serve-acp and what the served app loads, so lib/ is current (a no-op when it is). */
export function build(): void {
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/serve-acp', 'packages/provider-acp', 'packages/subagents-service', 'packages/subagent-tool'], { cwd: ROOT, stdio: 'pipe' })
}

/** A cordis.yml serving the fixture model and tools; `serve` is serve-acp's config (YAML, indented under `config:`). */
export function appYml(options: { serve?: string; parts?: string; extra?: string } = {}): string {
  return `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: script
- id: parts
  name: ${JSON.stringify(PARTS)}
  config:
${indent(options.parts ?? 'delayMs: 0', 4)}
${options.extra ?? ''}
- id: serve
  name: '@cordis-subagents/serve-acp'
  config:
${indent(options.serve ?? 'persona: "served at depth {depth}"', 4)}
`
}

function indent(text: string, by: number): string {
  return text.split('\n').map((line) => ' '.repeat(by) + line).join('\n')
}

export interface Served {
  child: ChildProcess
  connection: ReturnType<ReturnType<typeof sdk.client>['connect']>
  updates: Array<{ sessionId: string; update: any }>
  stderr(): string
  exited: Promise<number | null>
  /** Closes stdin and waits for the exit (SIGKILL after 10 s, which the caller's assertion on the code then shows). */
  close(): Promise<number | null>
}

export class Workspace {
  readonly dir = mkdtempSync(join(tmpdir(), 'serve-acp-'))
  readonly store = join(this.dir, 'store')
  private readonly running: Served[] = []

  file(name: string, text: string): string {
    const path = join(this.dir, name)
    writeFileSync(path, text)
    return path
  }

  /** Starts the bin on `yml` (its store in this workspace unless the yml says otherwise) and initializes (with `initMeta` as `_meta`). */
  async serve(yml: string, env: Record<string, string> = {}, initMeta?: Record<string, unknown>): Promise<Served & { init: any }> {
    const served = start(this.file(`app-${this.running.length}.yml`, yml), { ...env })
    this.running.push(served)
    const init = await served.connection.agent.request(sdk.methods.agent.initialize, {
      protocolVersion: 1, clientCapabilities: {}, ...initMeta ? { _meta: initMeta } : {},
    })
    return Object.assign(served, { init })
  }

  async dispose(): Promise<void> {
    await Promise.all(this.running.splice(0).map((served) => served.close()))
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** The bin on `config`; the environment is this process's minus crossing variables, plus `env`. */
export function start(config: string, env: Record<string, string> = {}, flags: string[] = []): Served {
  const base: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SUBAGENT_') && !key.startsWith('OPENAI_') && key !== 'TRACEPARENT') base[key] = value
  const child = spawn(process.execPath, [BIN, ...flags, config], { cwd: ROOT, env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  let err = ''
  child.stderr!.on('data', (chunk) => { err += chunk })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const updates: Served['updates'] = []
  const app = sdk.client({ name: 'serve-acp-test' })
    .onNotification(sdk.methods.client.session.update, ({ params }) => { updates.push(params as any) })
  const connection = app.connect(sdk.ndJsonStream(
    Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
  ))
  return {
    child, connection, updates, exited,
    stderr: () => err,
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.stdin!.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
}

export const newSession = (served: Served, cwd: string, meta?: Record<string, unknown>) =>
  served.connection.agent.request(sdk.methods.agent.session.new, { cwd, mcpServers: [], ...meta ? { _meta: meta } : {} })

export const prompt = (served: Served, sessionId: string, text: string, meta?: Record<string, unknown>) =>
  served.connection.agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }], ...meta ? { _meta: meta } : {} })

/** The agent's message text of a session so far. */
export const said = (served: Served, sessionId: string) => served.updates
  .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'agent_message_chunk')
  .map((u) => u.update.content.text as string).join('')

/** Rejection of `promise` (it must reject). */
export async function refusal(promise: Promise<unknown>): Promise<sdk.RequestError> {
  try {
    await promise
  } catch (error) {
    return error as sdk.RequestError
  }
  throw new Error('expected the request to be refused')
}

export { sdk }
