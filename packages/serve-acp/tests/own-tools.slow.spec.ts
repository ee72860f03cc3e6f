/// <reference types="mocha" />
// A served agent's own tools under the parent's tool ceiling: a parent host of ours delegates through the
// real provider-acp (which binds SUBAGENT_ALLOWED_TOOLS in the child) to the bin, with an MCP server in
// session/new. The MCP server's tools are the session's own: the served model is offered them, while the
// ceiling still removes a served tool the parent's view leaves out.
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import type { Tool } from '@cordis-subagents/tools'
import { appYml, build, ROOT, Workspace } from './helpers.js'
import { parentHost } from './parent-host.js'

const FIXTURE = join(ROOT, 'packages/mcp/tests/fixtures/server.mjs')

describe('serve-acp under provider-acp: the session\'s own tools and the parent\'s tool ceiling', function () {
  this.timeout(60_000)
  let ws: Workspace
  let ctx: Context | undefined

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
    await ws.dispose()
  })

  const startParent = () => parentHost(ws, ws.file('child.yml', appYml()), [
    { name: 'echo', description: 'Echoes.', input: z.object({ text: z.string() }), execute: async ({ text }) => ({ content: text }) },
    { name: 'secret', description: 'Withheld below.', input: z.object({}), execute: async () => ({ content: 'secret' }) },
  ] as Tool[], { mcpServers: [{ name: 'fixture', command: process.execPath, args: [FIXTURE, join(ws.dir, 'fixture.log')], env: [] }] } as never)

  async function toolsOffered(parentTools: string[]): Promise<string[]> {
    const parent = ctx!.agents.create({ tools: ctx!.tools.view({ allow: parentTools }) })
    try {
      const run = await ctx!.subagents.delegate('acp', { prompt: 'tools?', parent, signal: new AbortController().signal })
      const result = await run.result
      await run.dispose()
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      const listed = /^tools: (.*)$/.exec(result.output ?? '')
      if (!listed) throw new Error(`unexpected answer: ${result.output}`)
      return listed[1].split(',')
    } finally {
      await parent.dispose()
    }
  }

  it('the client-sent MCP server\'s tools are offered; the parent\'s ceiling still removes the served tools it excludes', async () => {
    ctx = await startParent()
    const offered = await toolsOffered(['echo'])
    expect(offered).to.include.members(['echo', 'fixture__echo', 'fixture__slow'])
    expect(offered).to.not.include('secret')
    expect(offered).to.not.include('ask')
    expect(offered.filter((name) => !name.startsWith('fixture__'))).to.deep.equal(['echo'])
    // A parent with both: the ceiling lets secret through, and the session's own tools stay.
    const wider = await toolsOffered(['echo', 'secret'])
    expect(wider.filter((name) => !name.startsWith('fixture__'))).to.deep.equal(['echo', 'secret'])
    expect(wider).to.include('fixture__echo')
  })
})
