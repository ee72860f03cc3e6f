// The real ACP adapters (root devDependencies) pointed at a loopback fake model server: Codex's
// (@zed-industries/codex-acp) on the Responses API, Claude Code's (@zed-industries/claude-agent-acp)
// on the Messages API. Each gets its own temporary home, so no login, config or history of this
// machine is read, and no request leaves 127.0.0.1.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { type FakeModelServer, type Script, startFakeModelServer } from './fake-model-server.js'
import { responsesApi } from './fake-responses-api.js'
import { messagesApi } from './fake-messages-api.js'

const require = createRequire(import.meta.url)

export type AdapterName = 'codex' | 'claude'

export interface RealAgent {
  name: AdapterName
  model: FakeModelServer
  /** provider-acp's `command`, `args` and `env` for this adapter. */
  command: string
  args: string[]
  env: Record<string, string>
  /** The adapter's temporary home (its config and session files). */
  home: string
  /** What identifies the adapter's processes in the process table. */
  processName: string
  close(): Promise<void>
}

/** A key the fake accepts and nothing else would: the adapters refuse to start without one. */
const FAKE_KEY = 'fake-model-key-loopback-only'

function packageDir(name: string): string {
  return dirname(require.resolve(`${name}/package.json`))
}

/** Codex reads its provider, model, sandbox and approvals from `$CODEX_HOME/config.toml`. */
function codexConfig(origin: string, model: string): string {
  return [
    `model = "${model}"`,
    'model_provider = "loopback"',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    '[model_providers.loopback]',
    'name = "loopback fake model"',
    `base_url = "${origin}/v1"`,
    'env_key = "LOOPBACK_MODEL_KEY"',
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n')
}

/**
 * A model Codex knows. With one it does not know, Codex first sends a warning ("Model metadata for
 * `…` not found …") as agent message text of the turn.
 */
export const CODEX_KNOWN_MODEL = 'gpt-5.4-mini'

export interface AgentOptions {
  /** Codex only: the model name in its config. */
  codexModel?: string
}

async function codex(script: Script, options: AgentOptions): Promise<RealAgent> {
  const model = await startFakeModelServer(responsesApi, script)
  const home = mkdtempSync(join(tmpdir(), 'real-codex-'))
  writeFileSync(join(home, 'config.toml'), codexConfig(model.origin, options.codexModel ?? CODEX_KNOWN_MODEL))
  return {
    name: 'codex',
    model,
    // The package's bin, as `npx @zed-industries/codex-acp` runs it: a node wrapper that runs the native binary.
    command: process.execPath,
    args: [join(packageDir('@zed-industries/codex-acp'), 'bin/codex-acp.js')],
    env: { HOME: home, CODEX_HOME: home, LOOPBACK_MODEL_KEY: FAKE_KEY, RUST_LOG: 'error' },
    home,
    processName: 'codex-acp',
    async close() { await model.close(); rmSync(home, { recursive: true, force: true }) },
  }
}

async function claude(script: Script): Promise<RealAgent> {
  const model = await startFakeModelServer(messagesApi, script)
  const home = mkdtempSync(join(tmpdir(), 'real-claude-'))
  return {
    name: 'claude',
    model,
    command: process.execPath,
    args: [join(packageDir('@zed-industries/claude-agent-acp'), 'dist/index.js')],
    env: {
      HOME: home,
      CLAUDE_CONFIG_DIR: home,
      ANTHROPIC_BASE_URL: model.origin,
      ANTHROPIC_API_KEY: FAKE_KEY,
      // No update checks, telemetry or error reports: nothing but the model server is reachable.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    },
    home,
    processName: 'claude-agent-acp',
    async close() { await model.close(); rmSync(home, { recursive: true, force: true }) },
  }
}

export function startRealAgent(name: AdapterName, script: Script, options: AgentOptions = {}): Promise<RealAgent> {
  return name === 'codex' ? codex(script, options) : claude(script)
}

/** The provider-acp entry of a cordis.yml for this adapter (extra lines indented under `config:`). */
export function providerEntry(agent: RealAgent, id: string, extra: string[] = []): string {
  const env = Object.entries(agent.env).map(([key, value]) => `      ${key}: ${JSON.stringify(value)}`)
  return [
    `- id: ${id}`,
    '  name: \'@cordis-subagents/provider-acp\'',
    '  config:',
    `    name: ${id}`,
    `    command: ${JSON.stringify(agent.command)}`,
    `    args: [${agent.args.map((arg) => JSON.stringify(arg)).join(', ')}]`,
    '    inherit: core',
    '    env:',
    ...env,
    '    startupTimeout: 60000',
    ...extra.map((line) => `    ${line}`),
  ].join('\n')
}
