// The watcher as people use it: a real loader app on a real cordis.yml, edited the ways editors
// and tools save files. What reloaded is read from `tools/changed` and from the entries' forks.
import { execFile } from 'node:child_process'
import { readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { expect } from 'chai'
import { Logger } from 'cordis'
import { watchFile } from '../src/file-watcher.js'
import { appConfig, renameSave, startTestApp, type TestApp, until } from './app.js'

const run = promisify(execFile)
const FORK_ONLY = ['removed subagent_fork', 'added subagent_fork']

/** The loader reloaded exactly these entries (and applied or unloaded none). */
function expectOnlyReloaded(app: TestApp, reloaded: string[]) {
  expect(app.entryEvents).to.deep.equal(reloaded.map((id) => `reload ${id}`))
}

describe('config-watch in a loader app', function () {
  this.timeout(60_000)
  let app: TestApp | undefined

  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('a plain write (same inode) reloads only the entry it changed', async () => {
    app = await startTestApp()
    writeFileSync(app.file, appConfig({ fork: '    description: written in place\n' }))
    const result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'applied', changed: ['fork'], errors: [] })
    expect(app.changes).to.deep.equal(FORK_ONLY)
    expect(app.description('subagent_fork')).to.include('Runs on: written in place.')
    expectOnlyReloaded(app, ['fork'])
  })

  it('rename-saves (a temp file renamed over it) reload each time: the watch follows the name, not the inode', async () => {
    app = await startTestApp()
    for (const version of [1, 2, 3]) {
      renameSave(app.file, appConfig({ fork: `    description: v${version}\n` }))
      expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
      expect(app.description('subagent_fork')).to.include(`Runs on: v${version}.`)
    }
    expect(app.changes).to.deep.equal([...FORK_ONLY, ...FORK_ONLY, ...FORK_ONLY])
  })

  it('sed -i (a real sed process) reloads', async () => {
    app = await startTestApp(appConfig({ fork: '    description: before sed\n' }))
    await run('sed', ['-i', 's/before sed/after sed/', app.file])
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.description('subagent_fork')).to.include('Runs on: after sed.')
    expect(app.changes).to.deep.equal(FORK_ONLY)
    expectOnlyReloaded(app, ['fork'])
  })

  it('vim\'s backupcopy=no (the file renamed away, a new one written under the name) reloads', async () => {
    app = await startTestApp()
    renameSync(app.file, `${app.file}~`)
    writeFileSync(app.file, appConfig({ fork: '    description: written by vim\n' }))
    // A look may fall between the two steps: the file is missing for a moment, nothing changes.
    let result = await app.nextCheck()
    if (result.status === 'rejected' && result.code === 'CONFIG_UNREADABLE') result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.changes).to.deep.equal(FORK_ONLY)
    expectOnlyReloaded(app, ['fork'])
  })

  it('removing its own entry from the file stops the watching; later saves change nothing', async () => {
    app = await startTestApp()
    renameSave(app.file, appConfig({ watch: false }))
    await until(() => app!.entryEvents.includes('unload watch'), 'the watch entry to unload')
    expect(app.ctx.loader.store.watch).to.equal(undefined)
    // A watcher armed now, with the plugin's debounce: once it fired for this save, the plugin
    // would have looked too.
    let sentinel = 0
    const watcher = watchFile(app.file, () => void sentinel++, { debounce: 50, retryDelay: 50 })
    try {
      renameSave(app.file, appConfig({ watch: false, fork: '    description: nobody watching\n' }))
      await until(() => sentinel > 0, 'the sentinel')
    } finally {
      watcher.close()
    }
    expect(app.description('subagent_fork')).to.not.include('nobody watching')
    expect(app.changes).to.deep.equal([])
  })

  it('an invalid save keeps the running config (and says what and where); the next valid save applies', async () => {
    app = await startTestApp()
    const lines = (text: string) => text.split('\n')
    const forkLine = lines(appConfig()).indexOf('- id: fork') + 1

    // YAML that does not parse.
    const broken = `${appConfig()}- id: [unclosed\n`
    renameSave(app.file, broken)
    let result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_SYNTAX' })
    expect(result.status === 'rejected' && result.line).to.equal(lines(broken).length)

    // A value the provider's schema refuses: the log says where and what, and that nothing changed.
    const logged: string[] = []
    const target = { colors: 0, showTime: '', print: (text: string) => void logged.push(text), levels: { base: 2 } } as unknown as Logger.Target
    Logger.targets.push(target)
    try {
      writeFileSync(app.file, appConfig({ fork: '    description: never applied\n    maxSteps: lots\n' }))
      result = await app.nextCheck()
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_ENTRY_SCHEMA', line: forkLine })
    expect(result.status === 'rejected' && result.reason).to.match(/^entry "fork" \(@cordis-subagents\/provider-fork\): .*maxSteps/)
    expect(logged.filter((line) => line.includes('config-watch'))).to.satisfy((lines: string[]) => lines.some((line) => line.includes(
      `${app!.file}:${forkLine}: entry "fork" (@cordis-subagents/provider-fork): $.maxSteps expected number but got lots [CONFIG_ENTRY_SCHEMA]. The running configuration is kept; fix the file and save it again.`)))

    // A new entry whose package does not exist.
    renameSave(app.file, appConfig({ extra: '- id: typo\n  name: \'@cordis-subagents/no-such-package\'\n' }))
    result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_ENTRY_IMPORT' })
    expect(result.status === 'rejected' && result.reason).to.include('"@cordis-subagents/no-such-package"')

    // Not a list of entries; an id used twice.
    writeFileSync(app.file, 'tools: {}\n')
    expect(await app.nextCheck()).to.deep.include({ status: 'rejected', code: 'CONFIG_SHAPE' })
    renameSave(app.file, appConfig({ extra: '- id: fork\n  name: \'@cordis-subagents/provider-spawn\'\n' }))
    result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_SHAPE' })
    expect(result.status === 'rejected' && result.reason).to.equal('id "fork" is used by entries 5 and 9; ids must be unique')

    // Nothing reloaded, nothing unregistered.
    expect(app.changes).to.deep.equal([])
    expectOnlyReloaded(app, [])
    expect(app.description('subagent_fork')).to.not.include('never applied')

    renameSave(app.file, appConfig({ fork: '    description: fixed\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.description('subagent_fork')).to.include('Runs on: fixed.')
    expect(app.changes).to.deep.equal(FORK_ONLY)
  })

  it('a touch, a save of the same text and a save that only reformats reload nothing', async () => {
    app = await startTestApp()
    const text = readFileSync(app.file, 'utf8')
    const later = new Date(Date.now() + 5_000)
    utimesSync(app.file, later, later)
    expect(await app.nextCheck()).to.deep.include({ status: 'unchanged' })
    renameSave(app.file, text)
    expect(await app.nextCheck()).to.deep.include({ status: 'unchanged' })
    // Comments, quoting and key order change; the entries do not.
    renameSave(app.file, text.replace('# a loader app', '# reformatted: a loader app').replace('model: test', 'model: "test"'))
    expect(await app.nextCheck()).to.deep.include({ status: 'unchanged' })
    expect(app.changes).to.deep.equal([])
    // A real change afterwards is the first reload.
    renameSave(app.file, appConfig({ fork: '    description: after the touches\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.changes).to.deep.equal(FORK_ONLY)
    expectOnlyReloaded(app, ['fork'])
  })

  it('the loader\'s own write-back (after ctx.loader.update) is not reloaded again', async () => {
    app = await startTestApp()
    await app.ctx.loader.update('spawn', { config: { name: 'spawn', description: 'set from code' } })
    // The loader writes cordis.yml (its own YAML: a temp file renamed over it).
    const result = await app.nextCheck()
    expect(readFileSync(app.file, 'utf8')).to.include('set from code')
    expect(result).to.deep.include({ status: 'unchanged' })
    // Only the update itself reloaded the spawn provider (its tool went and came back once).
    expect(app.changes).to.deep.equal(['removed subagent', 'added subagent'])
    expectOnlyReloaded(app, ['spawn'])
  })

  it('loaded with ctx.plugin before the loader has started, it watches the file the loader finds', async () => {
    const configWatch = await import('@cordis-subagents/config-watch')
    app = await startTestApp(appConfig({ watch: false }), { beforeStart: (ctx) => void ctx.plugin(configWatch, { debounce: 50 }) })
    renameSave(app.file, appConfig({ watch: false, fork: '    description: from ctx.plugin\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.changes).to.deep.equal(FORK_ONLY)
  })
})
