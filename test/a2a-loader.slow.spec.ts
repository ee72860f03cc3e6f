// Three tool loads through the real @cordisjs/loader reading a cordis.yml: `subagent` (spawn),
// `subagent_acp` (our ACP agent) and `subagent_remote` (our agent over A2A, started by the
// a2a-host plugin; the provider entry waits for it with `inject`). Each delegates for real.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { PACKAGES_PROMPT, REMOTE_PROMPT, ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { type App, startApp } from '@cordis-subagents/quickstart/app'
import { alive, buildQuickstart, eventually, QUICKSTART, ROOT } from './helpers.js'

const config = `
- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: demo
    cwd: ${JSON.stringify(ROOT)}
- id: demo
  name: '@cordis-subagents/quickstart/demo-model'
  config:
    name: demo
    delay: 1
- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: spawn
  name: '@cordis-subagents/provider-spawn'
- id: acp
  name: '@cordis-subagents/provider-acp'
  config:
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(join(QUICKSTART, 'lib/acp-agent.js'))}]
- id: a2a-host
  name: '@cordis-subagents/quickstart/a2a-host'
  config:
    root: ${JSON.stringify(ROOT)}
- id: remote
  name: '@cordis-subagents/provider-a2a'
  inject: [quickstartA2a]
  config:
    name: remote
    url: !!js "quickstartA2a.url"
    bearerToken: !!js "quickstartA2a.token"
- id: tool-subagent
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
- id: tool-subagent-acp
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: acp
    toolName: subagent_acp
- id: tool-subagent-remote
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: remote
    toolName: subagent_remote
- id: workspace
  name: '@cordis-subagents/quickstart/workspace-tools'
  config:
    root: ${JSON.stringify(ROOT)}
`

describe('cordis.yml through @cordisjs/loader: subagent, subagent_acp and subagent_remote together', function () {
  this.timeout(60_000)
  let dir: string
  let app: App

  before(() => buildQuickstart())
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'a2a-loader-'))
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, config)
    app = await startApp(file, { timeout: 30_000 })
  })
  afterEach(async () => {
    await app.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('loads the three tools, each bound to its provider, and each delegates for real', async () => {
    const { ctx } = app
    expect(ctx.subagents.list().map((p) => p.name).sort()).to.deep.equal(['acp', 'remote', 'spawn'])
    const tools = ctx.tools.list().map((t) => t.name)
    expect(tools).to.include.members(['subagent', 'subagent_acp', 'subagent_remote'])
    const remoteTool = ctx.tools.list().find((t) => t.name === 'subagent_remote')!
    expect(remoteTool.description).to.match(/Runs on: the remote agent "cordis-subagents quick start agent" at http:\/\/127\.0\.0\.1:\d+ over A2A/)

    const parent = ctx.agents.create({ label: 'parent' })
    const call = async (name: string, prompt: string) => {
      const result = await parent.tools.execute({ id: `call-${name}`, name, input: { description: `via ${name}`, prompt } }, { signal: new AbortController().signal, agent: parent } as never)
      expect(result.isError, result.content).to.not.equal(true)
      return result
    }
    const [spawned, acp, remote] = await Promise.all([
      call('subagent', `${PACKAGES_PROMPT}: packages/shared. Use read_file.`),
      call('subagent_acp', `${ROOT_PROMPT} and report its npm scripts.`),
      call('subagent_remote', `${REMOTE_PROMPT} (list_files on ".").`),
    ])
    expect(spawned.content).to.include('- @cordis-subagents/shared: no internal dependencies')
    expect(acp.content).to.match(/npm scripts .* \(answered at depth 1, pid \d+\)/)
    const pid = ctx.quickstartA2a.pid!
    expect(remote.content).to.match(new RegExp(`directories: .*packages.* \\(answered at depth 1, pid ${pid}\\)$`))
    expect(remote.metadata).to.include({ provider: 'remote', stopReason: 'completed' })
    await parent.dispose()

    // Stopping the app stops the A2A server process with its plugin.
    await app.stop()
    expect(await eventually(() => !alive(pid))).to.equal(true)
  })
})
