// Issue 39, item 10: the quick start's A2A server and the scale-out hosts (both examples/quickstart/lib/a2a-server.js)
// started from another directory with --root serve that root, not their working directory. Real processes on
// 127.0.0.1, driven over A2A 1.0 JSON-RPC with the token each printed; the scale-out host keeps its tasks in PostgreSQL.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import postgres from 'postgres'
import { ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { buildQuickstart, offlineEnv, QUICKSTART, ROOT } from './helpers.js'

const SERVER = join(QUICKSTART, 'lib/a2a-server.js')
const PG_URL = process.env.CHECKPOINTS_PG_URL ?? 'postgres://subagents:subagents@127.0.0.1:5432/subagents_test'

interface Server {
  url: string
  token: string
  stop(): Promise<void>
}

describe('issue 39: the A2A hosts serve --root, wherever they are started from', function () {
  this.timeout(90_000)
  let base: string
  let root: string
  let elsewhere: string
  const servers: Server[] = []

  before(() => {
    buildQuickstart()
    base = mkdtempSync(join(tmpdir(), 'a2a-root-'))
    root = join(base, 'root')
    elsewhere = join(base, 'elsewhere')
    mkdirSync(root)
    mkdirSync(elsewhere)
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'inside-the-root', workspaces: ['a'], scripts: { go: 'x' } }))
    writeFileSync(join(root, 'notes.txt'), 'notes inside the root')
    writeFileSync(join(elsewhere, 'package.json'), JSON.stringify({ name: 'the-working-directory', workspaces: [], scripts: {} }))
    writeFileSync(join(elsewhere, 'secret.txt'), 'a file outside the root')
  })
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.stop()))
  })
  after(() => rmSync(base, { recursive: true, force: true }))

  /** a2a-server.js run from `elsewhere` with --root; resolves once it printed its URL and token. */
  async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Server> {
    const child = spawn(process.execPath, [SERVER, '--root', root, '--exit-with-stdin', ...args], {
      cwd: elsewhere, stdio: ['pipe', 'pipe', 'pipe'], env: offlineEnv({ QUICKSTART_DEMO_DELAY: '0', ...env }),
    })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const server = { stop: () => stop(child, exited) } as Server
    servers.push(server)
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk).slice(-4096) })
    const line = await new Promise<{ url: string; token: string }>((resolve, reject) => {
      let out = ''
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk
        const found = /^(\{"url".*\})$/m.exec(out)
        if (found) resolve(JSON.parse(found[1]))
      })
      void exited.then(() => reject(new Error(`a2a-server exited before it listened:\n${stderr}`)))
    })
    return Object.assign(server, line)
  }

  async function stop(child: ChildProcess, exited: Promise<void>) {
    if (child.exitCode === null && child.signalCode === null) child.stdin!.end()
    await exited
  }

  /** One task (SendMessage, which answers once the task ended): the agent's answer text. */
  async function ask(server: Server, text: string): Promise<string> {
    const response = await fetch(`${server.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${server.token}` },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 1, method: 'SendMessage',
        params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } },
      }),
    })
    const body = await response.json() as { result?: { task?: Record<string, any> } }
    const task = body.result?.task
    expect(task?.status?.state, JSON.stringify(body)).to.equal('TASK_STATE_COMPLETED')
    const parts = [...task!.artifacts ?? []].flatMap((artifact: { parts: Array<{ text?: string }> }) => artifact.parts)
    return parts.map((part: { text?: string }) => part.text ?? '').join('')
  }

  it('the quick start\'s server (a2a-server.yml, the demo model) reads the root\'s package.json, not its working directory\'s', async () => {
    const server = await start([])
    const answer = await ask(server, `${ROOT_PROMPT} (the file package.json at the workspace root) and report its workspaces and npm scripts.`)
    expect(answer).to.match(/^inside-the-root: workspaces a; npm scripts go/)
  })

  it('a scale-out host (deploy/scale-out/host.yml on PostgreSQL) reads inside the root and is refused outside it', async () => {
    const schema = `a2a_root_${randomBytes(4).toString('hex')}`
    const yml = join(base, 'host.yml')
    writeFileSync(yml, readFileSync(join(ROOT, 'deploy/scale-out/host.yml'), 'utf8').replaceAll('@SCALE_OUT_DIR@', join(ROOT, 'deploy/scale-out')))
    const sql = postgres(PG_URL, { max: 1, connect_timeout: 5, onnotice: () => {} })
    try {
      const token = `root-spec-${randomBytes(12).toString('hex')}`
      const server = await start(['--config', yml], {
        SCALE_OUT_HOST_NAME: 'host-a', SCALE_OUT_HOST_PORT: '0', SCALE_OUT_SCHEMA: schema,
        SCALE_OUT_TOKEN: token, A2A_DATABASE_URL: PG_URL, SCALE_OUT_MODEL_DELAY: '0',
      })
      // The hosts take the deployment's token (tokensFromEnv), as behind nginx.
      server.token = token
      expect(await ask(server, 'What do the notes say? [read:notes.txt]')).to.equal('read: notes inside the root')
      // The working directory's file, by a path that would be inside it: outside the root, refused.
      expect(await ask(server, 'And this one? [read:../elsewhere/secret.txt]')).to.match(/^refused: .*outside the workspace root/)
      expect(await ask(server, 'Or this? [read:secret.txt]')).to.match(/^refused: .*does not exist in the workspace/)
    } finally {
      await Promise.all(servers.splice(0).map((server) => server.stop()))
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await sql.end({ timeout: 1 })
    }
  })
})
