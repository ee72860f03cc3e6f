// What a look at cordis.yml reads: one regular file, at most maxBytes, parsed from that one read,
// and never more values than maxBytes once YAML aliases are expanded.
import { mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { exceedsValues } from '../src/expanded-size.js'
import { parseConfigText, readConfigText } from '../src/read.js'
import { appConfig, renameSave, startTestApp, type TestApp } from './app.js'

/** Nested lists, each level 8 aliases of the one below: 8^levels values from a few hundred bytes. */
function aliasBomb(levels: number, indent = '    '): string {
  let text = `${indent}l0: &l0 [x, x, x, x, x, x, x, x]\n`
  for (let i = 1; i < levels; i++) text += `${indent}l${i}: &l${i} [${Array(8).fill(`*l${i - 1}`).join(', ')}]\n`
  return text
}

const WATCH_64K = '- id: watch\n  name: \'@cordis-subagents/config-watch\'\n  config:\n    debounce: 50\n    maxBytes: 65536\n'

describe('config-watch reads a bounded, regular file once', function () {
  this.timeout(60_000)
  let app: TestApp | undefined

  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('refuses a symlink to /dev/zero (CONFIG_NOT_A_FILE) without reading it; the next valid save applies', async () => {
    app = await startTestApp()
    symlinkSync('/dev/zero', `${app.file}.link`)
    renameSync(`${app.file}.link`, app.file)
    const result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_NOT_A_FILE' })
    expect(result.status === 'rejected' && result.reason).to.equal(
      'it is a character device, not a regular file; put a regular file (or a symlink to one) under that name')
    renameSave(app.file, appConfig({ fork: '    description: after the device\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
  })

  it('checks and applies the text it read, without reading the file a second time', async () => {
    app = await startTestApp()
    const loaderFile = app.ctx.loader.file!
    let reads = 0
    const read = loaderFile.read
    loaderFile.read = async () => {
      reads++
      return read.call(loaderFile)
    }
    renameSave(app.file, appConfig({ fork: '    description: read once\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.description('subagent_fork')).to.include('Runs on: read once.')
    expect(reads).to.equal(0)
  })

  it('refuses a save whose YAML aliases expand past maxBytes values (CONFIG_TOO_LARGE); the running config stays', async () => {
    app = await startTestApp(appConfig({ watch: false, extra: WATCH_64K }))
    // About 1 KB that stands for 8^6 = 262,144 values, more than 65,536.
    const bomb = appConfig({ watch: false, extra: WATCH_64K, fork: `    description: never applied\n    extra:\n${aliasBomb(6, '      ')}` })
    renameSave(app.file, bomb)
    const result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_TOO_LARGE' })
    expect(result.status === 'rejected' && result.reason).to.equal('YAML aliases expand it to more than 65536 values (maxBytes); use fewer aliases')
    expect(app.description('subagent_fork')).to.not.include('never applied')
    expect(app.changes).to.deep.equal([])
    renameSave(app.file, appConfig({ watch: false, extra: WATCH_64K, fork: '    description: after the bomb\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
  })
})

describe('config-watch read and size limits', () => {
  let dir: string
  beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'config-watch-read-'))))
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('reads a file of maxBytes and refuses one byte more', async () => {
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, 'x'.repeat(100))
    expect(await readConfigText(file, 100)).to.deep.equal({ text: 'x'.repeat(100) })
    expect(await readConfigText(file, 99)).to.deep.equal({ code: 'CONFIG_TOO_LARGE', reason: '100 bytes, more than maxBytes (99); shrink the file or raise maxBytes' })
  })

  it('counts an alias each time it is reached, and stops early on a bomb of any size', async () => {
    const parse = (text: string) => parseConfigText(text, 'application/yaml', async () => undefined)
    // 40 levels: 8^40 values. Counting stops at the limit.
    const huge = await parse(aliasBomb(40, ''))
    expect(exceedsValues(huge, 1_000_000)).to.equal(true)
    const small = await parse(aliasBomb(3, ''))
    // 8 + 8·8 + 8·64 = 584 leaves, 1 + 8 + 64 lists of level 2 down, 1 + 8 of level 1, 1 of level 0, and the mapping.
    expect(exceedsValues(small, 584 + 73 + 9 + 1 + 1)).to.equal(false)
    expect(exceedsValues(small, 584 + 73 + 9 + 1)).to.equal(true)
  })

  it('a file without aliases never has more values than bytes', async () => {
    const parse = (text: string) => parseConfigText(text, 'application/yaml', async () => undefined)
    for (const text of [`[${Array(5000).fill('a').join(',')}]`, `${'['.repeat(90)}${']'.repeat(90)}`, `{${Array(3000).fill(0).map((_, i) => `k${i}`).join(',')}}`]) {
      expect(exceedsValues(await parse(text), text.length)).to.equal(false)
    }
  })
})
