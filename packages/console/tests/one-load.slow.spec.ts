/// <reference types="mocha" />
// One subagentConsole per app. cordis applies a plugin that is not reusable once, whatever the number of entries: a
// second entry used to load as ACTIVE with nothing behind it (port B never bound, only cordis' uncoded "duplicate
// plugin" warning), and removing the first entry left its page served. Each load is now its own instance: a second live
// load fails at load with DUPLICATE_LOAD, each unload closes its own port, and `isolate` gives an entry its own.
import { expect } from 'chai'
import { accepts, eventually, freePort } from '@cordis-subagents/test-support'
import { ACTIVE, codeOf, FAILED, type LoadedApp, startLoadedApp } from '@cordis-subagents/test-support'

const entry = (id: string, port: number) => `- id: ${id}
  name: '@cordis-subagents/console'
  config:
    port: ${port}
`

describe('console: one load per app', function () {
  this.timeout(30_000)
  let app: LoadedApp | undefined
  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('a second entry fails at load with DUPLICATE_LOAD, saying how to serve a second port; each unload closes its own port', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    app = await startLoadedApp(entry('console-a', portA), { prefix: 'console-loader-' })
    await eventually(() => app!.ctx.get('subagentConsole')?.url, 'entry console-a serving')
    // The user adds a second entry to cordis.yml.
    await app.loader.create({ id: 'console-b', name: '@cordis-subagents/console', config: { port: portB } })
    await app.ctx.lifecycle.flush()
    const refused = app.errors.find((error) => codeOf(error) === 'DUPLICATE_LOAD') as Error | undefined
    expect(refused?.message, 'the second load is refused, coded').to.match(/loaded twice in this app.*isolate: \{ subagentConsole: true/)
    expect(refused?.message).to.include(`127.0.0.1:${portA}`)
    expect(app.status('console-a')).to.equal(ACTIVE)
    expect(app.status('console-b')).to.equal(FAILED)
    expect(await accepts(portB)).to.equal(false)
    // The refused entry goes: the first load is unaffected.
    app.loader.remove('console-b')
    await app.ctx.lifecycle.flush()
    expect(await accepts(portA)).to.equal(true)
    expect(app.ctx.get('subagentConsole')?.port).to.equal(portA)
    // The first entry goes: its own server closes.
    app.loader.remove('console-a')
    await app.ctx.lifecycle.flush()
    await eventually(async () => !await accepts(portA), `port ${portA} closed once its entry was removed`)
    expect(app.ctx.get('subagentConsole')).to.equal(undefined)
  })

  it('an entry with `isolate: { subagentConsole: true }` serves a second port; removing the first entry closes only its own', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    app = await startLoadedApp(entry('console-a', portA), { prefix: 'console-loader-' })
    await eventually(() => accepts(portA), 'entry console-a serving')
    const isolate = { subagentConsole: true } as const
    await app.loader.create({ id: 'console-b', name: '@cordis-subagents/console', isolate, config: { port: portB } })
    await eventually(async () => await accepts(portA) && accepts(portB), 'both entries serving')
    await app.ctx.lifecycle.flush()
    expect(app.errors.map(codeOf)).to.deep.equal([])
    expect(app.ctx.get('subagentConsole')?.port).to.equal(portA)
    app.loader.remove('console-a')
    await app.ctx.lifecycle.flush()
    await eventually(async () => !await accepts(portA), `port ${portA} closed once its entry was removed`)
    expect(await accepts(portB)).to.equal(true)
    expect(app.status('console-b')).to.equal(ACTIVE)
  })
})
