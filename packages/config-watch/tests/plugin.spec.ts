// The plugin's shape as the loader sees it, its unload, and the loaders it refuses.
import { writeFileSync } from 'node:fs'
import { expect } from 'chai'
import { Context } from 'cordis'
import * as configWatch from '@cordis-subagents/config-watch'
import { watchFile } from '../src/file-watcher.js'
import { appConfig, startTestApp, type TestApp, until } from './app.js'

const fsWatchers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'FSEventWrap').length
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length

describe('config-watch plugin', function () {
  this.timeout(60_000)
  let app: TestApp | undefined

  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('is a namespace plugin (name, inject, Config, apply; no default export) with bounded defaults', () => {
    expect(configWatch).to.not.have.property('default')
    expect(configWatch.name).to.equal('config-watch')
    expect(configWatch.inject).to.deep.equal(['loader'])
    expect(configWatch.Config({})).to.deep.equal({ debounce: 200, settleTimeout: 10_000, maxBytes: 1024 * 1024, retryDelay: 1000 })
    expect(() => configWatch.Config({ debounce: 3_600_000 })).to.throw()
    expect(() => configWatch.Config({ maxBytes: 0 })).to.throw()
  })

  it('unloading it closes its watcher and its pending timer: no later look, nothing left', async () => {
    app = await startTestApp(appConfig({ watch: false }))
    await new Promise((resolve) => setTimeout(resolve, 1))
    const watchersBefore = fsWatchers()
    const timersBefore = timers()
    const fork = app.ctx.plugin(configWatch, { debounce: 100 })
    expect(fsWatchers()).to.equal(watchersBefore + 1)
    writeFileSync(app.file, appConfig({ watch: false, fork: '    description: never seen\n' }))
    await until(() => timers() > timersBefore, 'the debounce timer')
    fork.dispose()
    // A watcher with the same debounce armed now: once it has fired for this save, the plugin's
    // look would have come too.
    let sentinel = 0
    const watcher = watchFile(app.file, () => void sentinel++, { debounce: 100, retryDelay: 50 })
    writeFileSync(app.file, appConfig({ watch: false, fork: '    description: still never seen\n' }))
    await until(() => sentinel > 0, 'the sentinel')
    watcher.close()
    await until(() => fsWatchers() === watchersBefore && timers() === timersBefore, 'the watchers and timers to be released')
    expect(app.checks).to.deep.equal([])
    expect(app.changes).to.deep.equal([])
  })

  it('refuses a loader that is not @cordisjs/loader, naming Koishi\'s own watcher (CONFIG_WATCH_LOADER)', async () => {
    const ctx = new Context()
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => void errors.push(error))
    // What Koishi's loader (@koishijs/loader) looks like to a plugin: readConfig, no entry tree.
    ctx.set('loader', { filename: '/app/koishi.yml', readConfig: async () => ({}) })
    ctx.plugin(configWatch)
    await ctx.start()
    await ctx.lifecycle.flush()
    expect(errors).to.have.length(1)
    expect(errors[0]).to.include({ name: 'ConfigWatchError', code: 'CONFIG_WATCH_LOADER' })
    expect((errors[0] as Error).message).to.include('@koishijs/plugin-hmr')
    await ctx.stop()
  })
})
