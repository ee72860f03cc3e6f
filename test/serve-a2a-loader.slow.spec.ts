// serve-a2a from a cordis.yml alone, read by the real @cordisjs/loader: the app serves its own agent
// over A2A (tools, agents, the demo model, serve-a2a) and a provider-a2a entry of the same app points
// at it with the service's fields (`inject: [a2aServer]`, `url: !!js "get('a2aServer').url"`,
// `bearerToken: !!js "get('a2aServer').token"`). A delegation through `subagent_remote` crosses HTTP and
// comes back with the answer, the depth the parent sent, and the child's usage.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type {} from '@cordis-subagents/serve-a2a'
import { REMOTE_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { type App, startApp } from '@cordis-subagents/quickstart/app'
import { ROOT } from './helpers.js'

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
- id: workspace
  name: '@cordis-subagents/quickstart/workspace-tools'
  config:
    root: ${JSON.stringify(ROOT)}
- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: a2a
  name: '@cordis-subagents/serve-a2a'
  config:
    name: served from cordis.yml
    persona: You are a read-only research agent, reached over A2A at depth {depth}.
    tools:
      allow: [list_files, read_file, search_text]
- id: remote
  name: '@cordis-subagents/provider-a2a'
  inject: [a2aServer]
  config:
    name: remote
    url: !!js "get('a2aServer').url"
    bearerToken: !!js "get('a2aServer').token"
- id: tool-subagent-remote
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: remote
    toolName: subagent_remote
`

describe('serve-a2a from cordis.yml through @cordisjs/loader, delegated to by provider-a2a of the same app', function () {
  this.timeout(60_000)
  let dir: string
  let app: App

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'serve-a2a-loader-'))
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, config)
    app = await startApp(file, { timeout: 30_000 })
  })
  afterEach(async () => {
    await app.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('serves, and a delegation over A2A with the generated token completes with the remote agent\'s answer and usage', async () => {
    const { ctx } = app
    expect(ctx.a2aServer.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(ctx.a2aServer.token).to.match(/^[A-Za-z0-9_-]{43}$/)
    expect(ctx.subagents.list().map((p) => p.name)).to.deep.equal(['remote'])
    const tool = ctx.tools.list().find((t) => t.name === 'subagent_remote')!
    expect(tool.description).to.match(/the remote agent "served from cordis\.yml" at http:\/\/127\.0\.0\.1:\d+ over A2A/)
    const parent = ctx.agents.create({ label: 'parent' })
    try {
      const result = await parent.tools.execute(
        { id: 'call-1', name: 'subagent_remote', input: { description: 'remote listing', prompt: `${REMOTE_PROMPT} (list_files on ".").` } },
        { signal: new AbortController().signal, agent: parent } as never,
      )
      expect(result.isError, result.content).to.not.equal(true)
      expect(result.content).to.match(new RegExp(`directories: .*packages.* \\(answered at depth 1, pid ${process.pid}\\)$`))
      expect(result.metadata).to.include({ provider: 'remote', stopReason: 'completed' })
      expect(result.usage!.inputTokens).to.be.greaterThan(0)
      expect(ctx.a2aServer.storedTasks).to.equal(1)
    } finally {
      await parent.dispose()
    }
  })
})
