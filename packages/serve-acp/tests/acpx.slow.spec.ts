// acpx (a real ACP client CLI, npm `acpx`) against the bin, offline with the fixture model:
// a one-shot `exec`, and acpx's saved sessions (`sessions new`, then prompts that each start the
// agent again and session/load the session, the first of them before any turn had finished).
import { execFile, execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { appYml, BIN, build, ROOT, Workspace } from './helpers.js'

const ACPX = join(ROOT, 'node_modules/acpx/dist/cli.js')

function processesMatching(needle: string): string[] {
  try {
    return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((line) => line.includes(needle) && !line.includes(' ps -eo '))
  } catch {
    return []
  }
}

describe('acpx drives the served agent (cordis-subagents-acp as a custom --agent)', function () {
  this.timeout(90_000)
  let ws: Workspace
  let config: string
  let project: string

  before(() => build())
  beforeEach(() => {
    ws = new Workspace()
    config = ws.file('agent.yml', appYml({ serve: `store: ${JSON.stringify(ws.store)}` }))
    project = join(ws.dir, 'project')
    mkdirSync(project)
    mkdirSync(join(ws.dir, 'home'))
  })
  afterEach(async () => {
    // acpx's queue owner keeps the agent for its --ttl (1 s here): wait for it to go.
    const deadline = Date.now() + 15_000
    while (processesMatching(config).length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(processesMatching(config), 'agent processes left behind').to.deep.equal([])
    await ws.dispose()
  })

  /** acpx with its state in a home of its own; resolves with stdout (rejects on a non-zero exit, with stderr). */
  function acpx(...args: string[]): Promise<string> {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: join(ws.dir, 'home') }
    for (const key of Object.keys(env)) if (key.startsWith('SUBAGENT_') || key.startsWith('OPENAI_')) delete env[key]
    const agent = `${process.execPath} ${BIN} ${config}`
    return new Promise((resolve, reject) => {
      execFile(process.execPath, [ACPX, '--format', 'text', '--ttl', '1', '--timeout', '60', '--agent', agent, ...args], { cwd: project, env, timeout: 80_000 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`acpx ${args.join(' ')} failed: ${error.message}\nstdout:\n${stdout}\nstderr:\n${stderr}`))
        else resolve(stdout)
      })
    })
  }

  it('exec: the answer text and the tool call come back', async () => {
    const out = await acpx('exec', 'echo hi from acpx')
    expect(out).to.include('echoed: hi from acpx')
    expect(out).to.include('[tool] echo {"text":"hi from acpx"} (completed)')
    expect(out).to.include('[done] end_turn')
  })

  it('saved sessions: sessions new, then prompts in new agent processes continue the session (session/load)', async () => {
    const created = await acpx('sessions', 'new')
    expect(created.trim()).to.match(/^session-\d+-[0-9a-f-]{36}$/)
    const first = await acpx('first words')
    expect(first).to.include('session/load')
    expect(first).to.include('you said: first words')
    const second = await acpx('history?')
    expect(second).to.include('user messages: 2')
  })
})
