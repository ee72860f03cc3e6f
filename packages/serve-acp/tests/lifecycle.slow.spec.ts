// The bin's process lifecycle: stdin closing or SIGTERM stops the app (its own children reaped) and
// exits 0; a config that does not serve fails loudly with a clear message and a non-zero code;
// stdout carries only ACP messages even when a plugin writes to it.
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { appYml, BIN, build, newSession, prompt, ROOT, said, start, Workspace } from './helpers.js'

const FIXTURE_AGENT = join(ROOT, 'packages/provider-acp/tests/fixtures/agent.mjs')

function processesMatching(needle: string): string[] {
  try {
    return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((line) => line.includes(needle) && !line.includes(' ps -eo '))
  } catch {
    return []
  }
}

async function eventually(check: () => boolean, timeout = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}

describe('cordis-subagents-acp: lifecycle and config errors', function () {
  this.timeout(60_000)
  let ws: Workspace

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(() => ws.dispose())

  /** A served app whose agents can delegate to an ACP child: provider-acp keeps a warm spare process, marked by `marker`. */
  const withChild = (marker: string) => appYml({
    serve: `store: ${JSON.stringify(ws.store)}`,
    extra: `- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: acp
  name: '@cordis-subagents/provider-acp'
  config:
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(FIXTURE_AGENT)}, stream, ${JSON.stringify(marker)}]
    warm: true
- id: tool-acp
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: acp
    toolName: subagent_acp`,
  })

  for (const how of ['stdin closes', 'SIGTERM'] as const) {
    it(`${how}: the app stops, its child processes are reaped, the exit code is 0`, async () => {
      const marker = `serve-acp-marker-${how.replace(/\W/g, '')}-${process.pid}-${Date.now()}`
      const served = await ws.serve(withChild(marker))
      const { sessionId } = await newSession(served, ws.dir)
      // The served agent delegates to an ACP child of its own; a warm spare follows the first run.
      expect((await prompt(served, sessionId, 'delegate')).stopReason).to.equal('end_turn')
      expect(said(served, sessionId)).to.match(/^delegated: /)
      expect(await eventually(() => processesMatching(marker).length > 0), 'the warm spare never started').to.equal(true)
      let code: number | null
      if (how === 'SIGTERM') {
        // stdin stays open: the signal alone stops it (close() below only guards against a hang).
        served.child.kill('SIGTERM')
        let timer: NodeJS.Timeout | undefined
        code = await Promise.race([served.exited, new Promise<null>((resolve) => { timer = setTimeout(() => resolve(null), 20_000) })])
        clearTimeout(timer)
        await served.close()
      } else {
        code = await served.close()
      }
      expect(code, served.stderr()).to.equal(0)
      expect(served.stderr()).to.include(`stopping (${how === 'SIGTERM' ? 'SIGTERM' : 'the ACP client closed stdin'})`)
      expect(await eventually(() => processesMatching(marker).length === 0), `left behind: ${processesMatching(marker)}`).to.equal(true)
    })
  }

  it('stdout carries only ACP messages: a plugin writing to stdout is sent to stderr', async () => {
    const noisy = ws.file('noisy.mjs', 'export const name = "noisy"\nexport function apply() { console.log("NOISE on console.log"); process.stdout.write("NOISE on stdout\\n") }\n')
    const served = await ws.serve(appYml({ serve: `store: ${JSON.stringify(ws.store)}`, extra: `- id: noisy\n  name: ${JSON.stringify(noisy)}` }))
    const { sessionId } = await newSession(served, ws.dir)
    // Every line the client parsed was a protocol message: the session works and the noise went to stderr.
    expect((await prompt(served, sessionId, 'hi')).stopReason).to.equal('end_turn')
    expect(served.stderr()).to.include('NOISE on console.log').and.include('NOISE on stdout')
    expect(await served.close()).to.equal(0)
  })

  it('a bad serve-acp config fails loudly: exit 1, the config error and what to check on stderr', async () => {
    const config = ws.file('bad.yml', appYml({ serve: 'tools: {}' }))
    const before = readFileSync(config, 'utf8')
    const served = start(config)
    const code = await served.exited
    expect(code).to.equal(1)
    expect(served.stderr()).to.include('config.tools is empty')
    expect(served.stderr()).to.include(`${config} does not serve ACP: no @cordis-subagents/serve-acp entry was applied`)
    // The loader never writes the operator's file.
    expect(readFileSync(config, 'utf8')).to.equal(before)
    await served.close()
  })

  it('a config without serve-acp, a schema error and a missing file each fail with a clear message', async () => {
    const none = start(ws.file('none.yml', '- id: tools\n  name: \'@cordis-subagents/tools\'\n'))
    expect(await none.exited).to.equal(1)
    expect(none.stderr()).to.include('no @cordis-subagents/serve-acp entry was applied')
    const schema = start(ws.file('schema.yml', appYml({ serve: 'maxSessions: 0' })))
    expect(await schema.exited).to.equal(1)
    expect(schema.stderr()).to.match(/maxSessions|expected/i)
    const missing = start(join(ws.dir, 'nope.yml'))
    expect(await missing.exited).to.equal(2)
    expect(missing.stderr()).to.include('does not exist')
    for (const served of [none, schema, missing]) await served.close()
  })

  it('an unreadable config file or a folder: exit 2, one line naming it, no stack trace', () => {
    const file = ws.file('locked.yml', appYml())
    chmodSync(file, 0o000)
    // root reads any file: run the bin as nobody, who may enter the folder but not read the file.
    const root = process.getuid?.() === 0
    if (root) chmodSync(ws.dir, 0o755)
    const cases: Array<[string, string]> = [
      [file, 'cannot be read (EACCES): check its permissions and those of its folders for the user the client runs this as'],
      [ws.dir, 'is not a file: give the path of the config file that loads @cordis-subagents/serve-acp (see --help)'],
    ]
    for (const [config, problem] of cases) {
      const run = spawnSync(process.execPath, [BIN, config], {
        cwd: ROOT, encoding: 'utf8', timeout: 40_000, env: { PATH: process.env.PATH ?? '' }, ...root ? { uid: 65534, gid: 65534 } : {},
      })
      expect(run.status, run.stderr).to.equal(2)
      expect(run.stderr).to.equal(`cordis-subagents-acp: config file ${config} ${problem}\n`)
      expect(run.stdout).to.equal('')
    }
  })
})
