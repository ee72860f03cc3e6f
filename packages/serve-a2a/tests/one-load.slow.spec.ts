/// <reference types="mocha" />
// One a2aServer per app. cordis applies a plugin that is not reusable once, whatever the number of entries: a second
// entry used to load as ACTIVE with nothing behind it (port B never bound, only cordis' uncoded "duplicate plugin"
// warning), and removing the first entry left its server serving. Each load is now its own instance: a second live
// load fails at load with DUPLICATE_LOAD, each unload closes its own port, and `isolate` gives an entry its own.
import { expect } from 'chai'
import { accepts, eventually, freePort } from '@cordis-subagents/test-support'
import { A2A_APP } from './helpers.js'
import { ACTIVE, codeOf, FAILED, type LoadedApp, startLoadedApp } from '@cordis-subagents/test-support'

const entry = (id: string, port: number) => `- id: ${id}
  name: '@cordis-subagents/serve-a2a'
  config:
    port: ${port}
`

describe('serve-a2a: one load per app', function () {
  this.timeout(30_000)
  let app: LoadedApp | undefined
  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('a second entry fails at load with DUPLICATE_LOAD, saying how to serve a second port; each unload closes its own port', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    app = await startLoadedApp(entry('a2a-a', portA), A2A_APP)
    await eventually(() => app!.ctx.get('a2aServer')?.url, 'entry a2a-a serving')
    // The user adds a second entry to cordis.yml.
    await app.loader.create({ id: 'a2a-b', name: '@cordis-subagents/serve-a2a', config: { port: portB } })
    await app.ctx.lifecycle.flush()
    const refused = app.errors.find((error) => codeOf(error) === 'DUPLICATE_LOAD') as Error | undefined
    expect(refused?.message, 'the second load is refused with a code').to.match(/loaded twice in this app.*isolate: \{ a2aServer: true \}/)
    expect(refused?.message).to.include(`127.0.0.1:${portA}`)
    expect(app.status('a2a-a')).to.equal(ACTIVE)
    expect(app.status('a2a-b')).to.equal(FAILED)
    expect(await accepts(portB)).to.equal(false)
    // The refused entry goes: the first load is unaffected.
    app.loader.remove('a2a-b')
    await app.ctx.lifecycle.flush()
    expect(await accepts(portA)).to.equal(true)
    expect(app.ctx.get('a2aServer')?.port).to.equal(portA)
    // The first entry goes: its own server closes.
    app.loader.remove('a2a-a')
    await app.ctx.lifecycle.flush()
    await eventually(async () => !await accepts(portA), `port ${portA} closed once its entry was removed`)
    expect(app.ctx.get('a2aServer')).to.equal(undefined)
  })

  it('an entry with `isolate: { a2aServer: true }` serves a second port; removing the first entry closes only the first port', async () => {
    const [portA, portB] = [await freePort(), await freePort()]
    app = await startLoadedApp(entry('a2a-a', portA), A2A_APP)
    await eventually(() => accepts(portA), 'entry a2a-a serving')
    await app.loader.create({ id: 'a2a-b', name: '@cordis-subagents/serve-a2a', isolate: { a2aServer: true }, config: { port: portB } })
    await eventually(async () => await accepts(portA) && accepts(portB), 'both entries serving')
    await app.ctx.lifecycle.flush()
    expect(app.errors.map(codeOf)).to.deep.equal([])
    expect(app.ctx.get('a2aServer')?.port).to.equal(portA)
    app.loader.remove('a2a-a')
    await app.ctx.lifecycle.flush()
    await eventually(async () => !await accepts(portA), `port ${portA} closed once its entry was removed`)
    expect(await accepts(portB)).to.equal(true)
    expect(app.status('a2a-b')).to.equal(ACTIVE)
  })
})
