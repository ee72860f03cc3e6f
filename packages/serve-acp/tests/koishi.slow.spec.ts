// A Koishi app served over ACP from its koishi.yml: `cordis-subagents-acp --koishi koishi.yml`
// starts the project's own Koishi loader in the bin's process (Koishi's logs go to stderr), and
// the SDK client and acpx drive it. The project is a temporary folder whose node_modules links to
// this repository's, as a Koishi project with our packages installed would have them.
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { BIN, build, newSession, PARTS, prompt, ROOT, said, sdk, start, Workspace } from './helpers.js'

describe('serve-acp in a Koishi app (koishi.yml, --koishi)', function () {
  this.timeout(60_000)
  let ws: Workspace
  let config: string

  before(() => build())
  beforeEach(() => {
    ws = new Workspace()
    symlinkSync(join(ROOT, 'node_modules'), join(ws.dir, 'node_modules'), 'dir')
    config = ws.file('koishi.yml', `plugins:
  ./node_modules/@cordis-subagents/tools:tools: {}
  ./node_modules/@cordis-subagents/agent:agent:
    model: script
  ${PARTS}:parts: {}
  ./node_modules/@cordis-subagents/serve-acp:serve:
    store: ${JSON.stringify(ws.store)}
    persona: koishi agent at depth {depth}
`)
  })
  afterEach(() => ws.dispose())

  it('answers an ACP client, reads the crossing, keeps stdout for ACP, leaves koishi.yml as it was and exits 0 on stdin close', async () => {
    const before = readFileSync(config, 'utf8')
    const served = start(config, { SUBAGENT_DEPTH: '1' }, ['--koishi'])
    const init = await served.connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
    expect(init.agentCapabilities?.loadSession).to.equal(true)
    const { sessionId } = await newSession(served, ws.dir)
    expect((await prompt(served, sessionId, 'echo hi from koishi')).stopReason).to.equal('end_turn')
    expect(said(served, sessionId)).to.equal('echoed: hi from koishi')
    const other = (await newSession(served, ws.dir)).sessionId
    await prompt(served, other, 'persona?')
    expect(said(served, other)).to.equal('persona: koishi agent at depth 1')
    expect(await served.close()).to.equal(0)
    // Koishi's own log lines went to stderr, not into the protocol stream.
    expect(served.stderr()).to.include('apply plugin ./node_modules/@cordis-subagents/serve-acp:serve')
    expect(readFileSync(config, 'utf8')).to.equal(before)
  })

  it('acpx exec against the Koishi app', async () => {
    mkdirSync(join(ws.dir, 'home'))
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: join(ws.dir, 'home') }
    for (const key of Object.keys(env)) if (key.startsWith('SUBAGENT_') || key.startsWith('OPENAI_')) delete env[key]
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [join(ROOT, 'node_modules/acpx/dist/cli.js'), '--format', 'text', '--timeout', '60', '--agent', `${process.execPath} ${BIN} --koishi ${config}`, 'exec', 'echo koishi over acpx'],
        { cwd: ws.dir, env, timeout: 50_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stdout}\n${stderr}`)) : resolve(stdout)))
    })
    expect(out).to.include('echoed: koishi over acpx')
  })

  it('a koishi.yml that does not load serve-acp fails with a clear message', async () => {
    const none = start(ws.file('koishi-none.yml', 'plugins:\n  ./node_modules/@cordis-subagents/tools:tools: {}\n'), {}, ['--koishi'])
    expect(await none.exited).to.equal(1)
    expect(none.stderr()).to.include('no @cordis-subagents/serve-acp entry was applied')
    await none.close()
  })
})
