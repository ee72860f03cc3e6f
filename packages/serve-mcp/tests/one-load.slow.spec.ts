/// <reference types="mocha" />
// One mcpServe per app. cordis applies a plugin that is not reusable once, whatever the number of entries: a second
// entry used to load as ACTIVE with nothing behind it (port B never bound, only cordis' uncoded "duplicate plugin"
// warning), and removing the first entry left its server serving. Each load is now its own instance: a second live
// load fails at load with MCP_SERVE_DUPLICATE_LOAD, each unload closes its own port, and `isolate` gives an entry its own.
import { expect } from 'chai'
import { accepts, eventually, freePort } from '@cordis-subagents/test-support'
import { CORE_ENTRIES } from './helpers.js'
import { ACTIVE, codeOf, FAILED, type LoadedApp, startLoadedApp } from '@cordis-subagents/test-support'

const entry = (id: string, port: number) => `- id: ${id}
  name: '@cordis-subagents/serve-mcp'
  config:
    port: ${port}
    tools: [subagent]
`

describe('serve-mcp: one load per app', function () {
  this.timeout(30_000)
  let app: LoadedApp | undefined
  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('a second entry fails at load with MCP_SERVE_DUPLICATE_LOAD, saying how to serve two ports; each unload closes its own', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    app = await startLoadedApp(entry('mcp-a', portA), { core: CORE_ENTRIES, prefix: 'serve-mcp-loader-' })
    await eventually(() => app!.ctx.get('mcpServe')?.url, 'entry mcp-a serving')
    // The user adds a second entry to cordis.yml.
    await app.loader.create({ id: 'mcp-b', name: '@cordis-subagents/serve-mcp', config: { port: portB, tools: ['subagent'] } })
    await app.ctx.lifecycle.flush()
    const refused = app.errors.find((error) => codeOf(error) === 'MCP_SERVE_DUPLICATE_LOAD') as Error | undefined
    expect(refused?.message, 'the second load is refused with a code').to.match(/loaded twice in this app.*isolate: \{ mcpServe: true \}/)
    expect(refused?.message).to.include(`127.0.0.1:${portA}`)
    expect(app.status('mcp-a')).to.equal(ACTIVE)
    expect(app.status('mcp-b')).to.equal(FAILED)
    expect(await accepts(portB)).to.equal(false)
    // The refused entry goes: the first load is unaffected.
    app.loader.remove('mcp-b')
    await app.ctx.lifecycle.flush()
    expect(await accepts(portA)).to.equal(true)
    expect(app.ctx.get('mcpServe')?.url).to.equal(`http://127.0.0.1:${portA}/mcp`)
    // The first entry goes: its own server closes.
    app.loader.remove('mcp-a')
    await app.ctx.lifecycle.flush()
    await eventually(async () => !await accepts(portA), `port ${portA} closed once its entry was removed`)
    expect(app.ctx.get('mcpServe')).to.equal(undefined)
  })

  it('an entry with `isolate: { mcpServe: true }` serves a second port; removing the first entry closes only the first port', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    app = await startLoadedApp(entry('mcp-a', portA), { core: CORE_ENTRIES, prefix: 'serve-mcp-loader-' })
    await eventually(() => accepts(portA), 'entry mcp-a serving')
    const isolate = { mcpServe: true } as const
    await app.loader.create({ id: 'mcp-b', name: '@cordis-subagents/serve-mcp', isolate, config: { port: portB, tools: ['subagent'] } })
    await eventually(async () => await accepts(portA) && accepts(portB), 'both entries serving')
    await app.ctx.lifecycle.flush()
    expect(app.errors.map(codeOf)).to.deep.equal([])
    expect(app.ctx.get('mcpServe')?.url).to.equal(`http://127.0.0.1:${portA}/mcp`)
    app.loader.remove('mcp-a')
    await app.ctx.lifecycle.flush()
    await eventually(async () => !await accepts(portA), `port ${portA} closed once its entry was removed`)
    expect(await accepts(portB)).to.equal(true)
    expect(app.status('mcp-b')).to.equal(ACTIVE)
  })
})
