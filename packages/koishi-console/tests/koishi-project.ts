// A Koishi project run the way a Koishi user runs it: `koishi start koishi.yml` (test/support/koishi-start.ts)
// in a temporary folder whose node_modules links to this repository's. Its koishi.yml loads the HTTP
// server on 127.0.0.1, Koishi's console from npm, optionally its users (@koishijs/plugin-auth on an
// in-memory SQLite database), the agent stack by path, this package's page, and the scenarios fixture.
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort } from '@cordis-subagents/test-support'
import { buildPackages, koishiStart, type KoishiRun } from '../../../test/support/koishi-start.js'
import { ROOT } from '../../../test/helpers.js'
import { sourceDigest } from '../scripts/client-digest.mjs'
import { ConsoleClient } from './console-client.js'

const PACKAGE = join(ROOT, 'packages/koishi-console')
const PACKAGES = ['tools', 'agent', 'subagents-service', 'provider-spawn', 'subagent-tool', 'console', 'koishi-console']

export interface Project {
  /** The console's page (`http://127.0.0.1:port/`). */
  url: string
  /** The console's WebSocket. */
  ws: string
  /** The worker's output so far. */
  output: () => string
  /** Ctrl-C, as a person stops it, and the run's end. */
  stop: () => Promise<KoishiRun>
}

/** Builds the page's bundle when dist/ is missing or was built from other sources (its stamp). */
function buildClient(): void {
  const stamp = join(PACKAGE, 'dist/source.sha256')
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === sourceDigest(PACKAGE)) return
  execFileSync(process.execPath, [join(PACKAGE, 'scripts/build-client.mjs')], { cwd: PACKAGE, stdio: 'pipe' })
}

/**
 * The project's node_modules: a link to each of this repository's, but this package, which is a copy
 * (package.json, lib/, dist/) as npm installs it. The console serves a page's files only from under a
 * node_modules folder, and Node resolves a linked package to its real path (packages/koishi-console).
 */
function installInto(dir: string): void {
  const modules = join(dir, 'node_modules')
  const ours = join(modules, '@cordis-subagents')
  mkdirSync(ours, { recursive: true })
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== '@cordis-subagents') symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir')
  }
  for (const name of readdirSync(join(ROOT, 'node_modules/@cordis-subagents'))) {
    if (name !== 'koishi-console') symlinkSync(join(ROOT, 'node_modules/@cordis-subagents', name), join(ours, name), 'dir')
  }
  for (const part of ['package.json', 'lib', 'dist']) cpSync(join(PACKAGE, part), join(ours, 'koishi-console', part), { recursive: true })
}

export async function startProject(options: { auth?: boolean; config?: Record<string, unknown> } = {}): Promise<Project> {
  buildPackages(PACKAGES)
  buildClient()
  const dir = mkdtempSync(join(tmpdir(), 'koishi-console-'))
  installInto(dir)
  copyFileSync(join(PACKAGE, 'tests/fixtures/scenarios.cjs'), join(dir, 'scenarios.cjs'))
  writeFileSync(join(dir, 'package.json'), '{ "name": "koishi-console-project", "private": true }\n')
  const port = await freePort()
  const auth = options.auth ? [
    '  ./node_modules/@minatojs/driver-sqlite:database:',
    '    path: ":memory:"',
    '  auth:',
    '    admin:',
    '      enabled: true',
    '      username: admin',
    '      password: admin-password',
  ] : []
  writeFileSync(join(dir, 'koishi.yml'), [
    'plugins:',
    '  server:',
    '    host: 127.0.0.1',
    `    port: ${port}`,
    `    maxPort: ${port + 50}`,
    '  console:',
    '    open: false',
    ...auth,
    '  ./node_modules/@cordis-subagents/tools:tools: {}',
    '  ./node_modules/@cordis-subagents/agent:agent:',
    '    model: scripted',
    '  ./node_modules/@cordis-subagents/subagents-service:subagents: {}',
    '  ./node_modules/@cordis-subagents/provider-spawn:spawn:',
    '    name: spawn',
    '  ./node_modules/@cordis-subagents/provider-spawn:spawn-ask:',
    '    name: spawn-ask',
    '    askParent: true',
    '  ./node_modules/@cordis-subagents/subagent-tool:subagent:',
    '    provider: spawn',
    '    toolName: subagent',
    '  ./node_modules/@cordis-subagents/subagent-tool:ask-child:',
    '    provider: spawn-ask',
    '    toolName: ask_child',
    '    questions: escalate',
    `  ./node_modules/@cordis-subagents/koishi-console:delegations: ${JSON.stringify(options.config ?? {})}`,
    '  ./scenarios.cjs:scenarios: {}',
    '',
  ].join('\n'))
  const run = koishiStart(dir, 180_000)
  let stdout = ''
  let stderr = ''
  run.child.stdout!.on('data', (chunk) => { stdout += chunk })
  run.child.stderr!.on('data', (chunk) => { stderr += chunk })
  const output = () => `stdout:\n${stdout}\nstderr:\n${stderr}`
  const exited = run.done.finally(() => rmSync(dir, { recursive: true, force: true }))
  let ended = false
  void exited.then(() => { ended = true }, () => { ended = true })
  const listening = await eventually(() => {
    if (ended) throw new Error(`koishi start exited\n${output()}`)
    return /server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)
  }, 'the console listening', 60_000).catch((error: Error) => {
    run.child.kill('SIGKILL')
    throw new Error(`${error.message}\n${output()}`)
  })
  const base = `127.0.0.1:${listening[1]}`
  // The server logs that it listens as it calls listen(): the first connection may come too early.
  const client = await eventually(() => ConsoleClient.open(`ws://${base}/status`).catch(() => undefined), 'the console WebSocket open').catch((error: Error) => {
    run.child.kill('SIGKILL')
    throw new Error(`${error.message}\n${output()}`)
  })
  const worker = (await client.call('fixture/pid')).value as number
  client.close()
  return {
    url: `http://${base}/`,
    ws: `ws://${base}/status`,
    output,
    stop: async () => {
      // Ctrl-C reaches the worker (koishi start's CLI waits for it to exit).
      if (!ended) process.kill(worker, 'SIGINT')
      return exited
    },
  }
}
