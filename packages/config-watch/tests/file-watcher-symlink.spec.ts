// A cordis.yml that is a symlink to a file elsewhere: edits of the target in place are seen, and
// the watch follows the link when it is pointed at another file.
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type FileWatcher, watchFile } from '../src/file-watcher.js'
import { until } from './app.js'

const fsWatchers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'FSEventWrap').length

describe('watchFile on a symlinked file', function () {
  this.timeout(30_000)
  let root: string
  let file: string
  const open: FileWatcher[] = []

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'config-watch-link-'))
    for (const dir of ['app', 'conf', 'other']) mkdirSync(join(root, dir))
    writeFileSync(join(root, 'conf', 'real.yml'), 'a: 1\n')
    file = join(root, 'app', 'cordis.yml')
    symlinkSync(join(root, 'conf', 'real.yml'), file)
  })
  afterEach(() => {
    for (const watcher of open.splice(0)) watcher.close()
    rmSync(root, { recursive: true, force: true })
  })

  function watched() {
    let calls = 0
    open.push(watchFile(file, () => void calls++, { debounce: 50, retryDelay: 50 }))
    return { get calls() { return calls } }
  }

  it('sees an edit in place of the target in another directory', async () => {
    const seen = watched()
    writeFileSync(join(root, 'conf', 'real.yml'), 'a: 2\n')
    await until(() => seen.calls >= 1, 'a call for the edit of the target')
  })

  it('follows the link to a new target, and no longer reacts to the old one', async () => {
    const seen = watched()
    writeFileSync(join(root, 'other', 'next.yml'), 'a: 1\n')
    symlinkSync(join(root, 'other', 'next.yml'), `${file}.new`)
    renameSync(`${file}.new`, file)
    await until(() => seen.calls >= 1, 'a call for the switched link')
    writeFileSync(join(root, 'other', 'next.yml'), 'a: 3\n')
    await until(() => seen.calls >= 2, 'a call for the edit of the new target')
    // A watcher armed on the old target's directory now: once it has fired, a call would have come too.
    let sentinel = 0
    open.push(watchFile(join(root, 'conf', 'real.yml'), () => void sentinel++, { debounce: 50, retryDelay: 50 }))
    writeFileSync(join(root, 'conf', 'real.yml'), 'a: 4\n')
    await until(() => sentinel > 0, 'the sentinel')
    expect(seen.calls).to.equal(2)
  })

  it('sees an edit of a target in the same directory under another name', async () => {
    writeFileSync(join(root, 'app', 'cordis.prod.yml'), 'a: 1\n')
    rmSync(file)
    symlinkSync('cordis.prod.yml', file)
    const seen = watched()
    writeFileSync(join(root, 'app', 'cordis.prod.yml'), 'a: 2\n')
    await until(() => seen.calls >= 1, 'a call for the edit of the target')
  })

  it('close releases the watch on the target\'s directory too', async () => {
    const before = fsWatchers()
    const watcher = watchFile(file, () => {}, { debounce: 50, retryDelay: 50 })
    expect(fsWatchers()).to.equal(before + 2)
    watcher.close()
    await until(() => fsWatchers() === before, 'both watchers to be released')
  })
})
