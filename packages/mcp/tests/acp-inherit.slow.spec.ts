/// <reference types="mocha" />
// Item 2: an ACP child gets the MCP servers its parent may use (provider-acp inheritMcpServers),
// through the loader, checked with provider-acp's fixture agent that echoes what session/new carried.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { type App, settle, startApp } from '@cordis-subagents/quickstart/app'
import { CORE_ENTRIES, eventually, serverBin } from './helpers.js'

const ACP_FIXTURE = fileURLToPath(new URL('../../provider-acp/tests/fixtures/agent.mjs', import.meta.url))

function config(dir: string) {
  const node = JSON.stringify(process.execPath)
  return `
${CORE_ENTRIES}
- id: servers
  name: '@cordis-subagents/mcp/servers'
- id: files
  name: '@cordis-subagents/mcp'
  config:
    name: files
    command: ${node}
    args: [${JSON.stringify(serverBin('@modelcontextprotocol/server-filesystem'))}, ${JSON.stringify(dir)}]
    env:
      FILES_SETTING: on
- id: every
  name: '@cordis-subagents/mcp'
  config:
    name: every
    command: ${node}
    args: [${JSON.stringify(serverBin('@modelcontextprotocol/server-everything'))}, stdio]
    allow: [echo]
- id: acp
  name: '@cordis-subagents/provider-acp'
  config:
    command: ${node}
    args: [${JSON.stringify(ACP_FIXTURE)}, echo]
    inheritMcpServers: true
    mcpServers:
      - { name: own, command: own-server, args: [], env: [] }
- id: tool-acp
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: acp
    toolName: subagent_acp
`
}

describe('provider-acp inheritMcpServers: MCP servers reach an ACP child', function () {
  this.timeout(60_000)
  let dir: string
  let app: App

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-acp-'))
    writeFileSync(join(dir, 'cordis.yml'), config(dir))
    app = await startApp(join(dir, 'cordis.yml'), { timeout: 30_000 })
    await eventually('MCP tools mounted', () => app.ctx.tools.has('files__read_text_file') && app.ctx.tools.has('every__echo')
      && app.ctx.mcp?.list().length === 2 && app.ctx.tools.has('subagent_acp'), 30_000)
  })

  after(async () => {
    await app?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const delegate = async (tools?: { deny: string[] }) => {
    const parent = app.ctx.agents.create({ label: 'spec-parent', ...tools ? { tools: app.ctx.tools.view(tools) } : {} })
    try {
      const result = await parent.run('DELEGATE subagent_acp list the files', { signal: new AbortController().signal })
      const echoed = /^parent got: ([\s\S]+)$/.exec(result.text)
      if (!echoed) throw new Error(`unexpected answer: ${result.text}`)
      return JSON.parse(echoed[1]) as { mcpServers: Array<{ name: string; command?: string; args?: string[]; env?: unknown }> }
    } finally {
      await parent.dispose()
    }
  }

  it('passes the configured servers plus every unfiltered mounted server the parent fully sees, in session/new form', async () => {
    const { mcpServers } = await delegate()
    expect(mcpServers.map((s) => s.name)).to.deep.equal(['own', 'files'])
    const files = mcpServers[1]
    expect(files.command).to.equal(process.execPath)
    expect(files.args).to.deep.equal([serverBin('@modelcontextprotocol/server-filesystem'), dir])
    expect(files.env).to.deep.equal([{ name: 'FILES_SETTING', value: 'on' }])
  })

  it('a server whose tools the parent\'s view partly denies is not passed', async () => {
    const { mcpServers } = await delegate({ deny: ['files__write_file'] })
    expect(mcpServers.map((s) => s.name)).to.deep.equal(['own'])
  })

  it('without inheritMcpServers only the configured servers go', async () => {
    writeFileSync(join(dir, 'cordis.yml'), config(dir).replace('inheritMcpServers: true', 'inheritMcpServers: false'))
    await app.loader.refresh()
    await settle(app.ctx)
    await eventually('the acp tool is back', () => app.ctx.tools.has('subagent_acp'))
    const { mcpServers } = await delegate()
    expect(mcpServers.map((s) => s.name)).to.deep.equal(['own'])
  })
})
