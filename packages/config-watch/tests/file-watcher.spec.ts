// The directory watch under the plugin: debounce, rename-saves, re-arming after a failure, close.
import { type FSWatcher, mkdirSync, mkdtempSync, renameSync, rmSync, watch, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type FileWatcher, watchFile } from '../src/file-watcher.js'
import { until } from './app.js'

/** Counts calls and lets a test wait for the next one. */
function counter() {
  let calls = 0
  return {
    onChange: () => void calls++,
    get calls() {
      return calls
    },
    async reach(n: number, what = `${n} calls`) {
      await until(() => calls >= n, what)
    },
  }
}

const fsWatchers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'FSEventWrap').length
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length

describe('watchFile', function () {
  this.timeout(30_000)
  let dir: string
  let file: string
  const open: FileWatcher[] = []

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-watch-file-'))
    file = join(dir, 'cordis.yml')
    writeFileSync(file, 'a: 1\n')
  })
  afterEach(() => {
    for (const watcher of open.splice(0)) watcher.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('calls once for a burst of writes, and again for a later rename-save', async () => {
    const seen = counter()
    open.push(watchFile(file, seen.onChange, { debounce: 2_000, retryDelay: 50 }))
    for (let i = 0; i < 5; i++) writeFileSync(file, `a: ${i}\n`)
    await seen.reach(1)
    // A sentinel with the same debounce, armed now: once it has fired for the next save, any call
    // the burst could still cause would have come too.
    const sentinel = counter()
    open.push(watchFile(file, sentinel.onChange, { debounce: 2_000, retryDelay: 50 }))
    writeFileSync(join(dir, 'next.tmp'), 'a: 9\n')
    renameSync(join(dir, 'next.tmp'), file)
    await sentinel.reach(1)
    await seen.reach(2)
    expect(seen.calls).to.equal(2)
  })

  it('ignores other files of the directory, the loader\'s cordis.yml.tmp among them', async () => {
    const seen = counter()
    const sentinel = counter()
    open.push(watchFile(file, seen.onChange, { debounce: 50, retryDelay: 50 }))
    open.push(watchFile(join(dir, 'other.txt'), sentinel.onChange, { debounce: 50, retryDelay: 50 }))
    writeFileSync(`${file}.tmp`, 'a: 2\n')
    writeFileSync(join(dir, 'other.txt'), 'x')
    await sentinel.reach(1)
    expect(seen.calls).to.equal(0)
  })

  it('after the watcher fails it is armed again (the old one closed), and sees the next save', async () => {
    const made: FSWatcher[] = []
    const closed: FSWatcher[] = []
    const errors: unknown[] = []
    const seen = counter()
    open.push(watchFile(file, seen.onChange, {
      debounce: 50,
      retryDelay: 50,
      onError: (error) => void errors.push(error),
      watch: ((...args: Parameters<typeof watch>) => {
        const watcher = watch(...args)
        const close = watcher.close.bind(watcher)
        watcher.close = () => {
          closed.push(watcher)
          close()
        }
        made.push(watcher)
        return watcher
      }) as typeof watch,
    }))
    expect(made).to.have.length(1)
    made[0]!.emit('error', Object.assign(new Error('watch failed'), { code: 'EMFILE' }))
    expect(errors.map((error) => (error as Error).message)).to.deep.equal(['watch failed'])
    expect(closed).to.deep.equal([made[0]])
    await until(() => made.length === 2, 'a second watcher')
    // Armed again, it looks once (a save may have come while none was armed)…
    await seen.reach(1, 'the look after re-arming')
    // …and follows later saves.
    writeFileSync(file, 'a: 3\n')
    await seen.reach(2, 'the save after re-arming')
  })

  it('a directory that is not there yet is retried until it is, then watched', async () => {
    const later = join(dir, 'later')
    const errors: unknown[] = []
    const seen = counter()
    open.push(watchFile(join(later, 'cordis.yml'), seen.onChange, { debounce: 50, retryDelay: 20, onError: (error) => void errors.push(error) }))
    await until(() => errors.length >= 2, 'two failed attempts')
    expect((errors[0] as NodeJS.ErrnoException).code).to.equal('ENOENT')
    mkdirSync(later)
    writeFileSync(join(later, 'cordis.yml'), 'a: 1\n')
    await seen.reach(1)
  })

  it('close leaves no fs watcher and no timer behind, even with a call pending', async () => {
    // Mocha's own test timer shows up after the first tick: count from there.
    await new Promise((resolve) => setTimeout(resolve, 1))
    const watchersBefore = fsWatchers()
    const timersBefore = timers()
    const seen = counter()
    const watcher = watchFile(file, seen.onChange, { debounce: 60_000, retryDelay: 50 })
    expect(fsWatchers()).to.equal(watchersBefore + 1)
    writeFileSync(file, 'a: 2\n')
    await until(() => timers() > timersBefore, 'the debounce timer')
    watcher.close()
    await until(() => fsWatchers() === watchersBefore && timers() === timersBefore, 'the watcher and its timer to be released')
    expect(seen.calls).to.equal(0)
  })
})
