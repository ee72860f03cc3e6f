// What config-watch logs of a save the file's author chose the size of: a save that changes 3,000 entries logs one
// bounded line naming ten of them and counting the rest, not a line listing every one; so does the line of their errors.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { Logger } from 'cordis'
import { namedList } from '../src/log-lines.js'
import { appConfig, startTestApp, type TestApp } from './app.js'

const ENTRIES = 3000
const FAILING = 30
/** A long id, and one breaking the line with an escape sequence and a newline (a quoted YAML string holds both). */
const idOf = (i: number) => i === 0 ? 'first\\u001b[2J\\nforged: line' : `e${String(i).padStart(5, '0')}${'n'.repeat(200)}`
/** Longest line a capture accepts: each of ten names cut at 100 characters, or ten errors at 300, plus the wording. */
const BOUND = 4000

/** The content of every record on the `config-watch` logger while `run` runs, at every level, uncut by the target. */
async function logsOf(run: () => Promise<void>): Promise<Array<{ type: string; content: string }>> {
  const records: Array<{ type: string; content: string }> = []
  const target = {
    levels: { base: 3 },
    // reggol cuts each line of a record at a target's maxLength (10,240 by default): measure what was built.
    maxLength: Infinity,
    record: (record: Logger.Record) => {
      if (record.name === 'config-watch') records.push({ type: record.type, content: record.content })
    },
  } as unknown as Logger.Target
  Logger.targets.push(target)
  try {
    await run()
  } finally {
    Logger.targets.splice(Logger.targets.indexOf(target), 1)
  }
  return records
}

describe('config-watch log lines', function () {
  this.timeout(60_000)
  let app: TestApp | undefined

  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('names ten items, each on one line and cut, and counts the rest', () => {
    const items = Array.from({ length: ENTRIES }, (_, i) => i === 0 ? `a\u001b[2J\nb\u202e${'x'.repeat(1_000_000)}` : `item${i}`)
    const line = namedList(items, 100)
    expect(line).to.match(/^a bx{90,}…, item1, item2, /)
    expect(line.endsWith(', item9, … and 2,990 more')).to.equal(true)
    expect(line).to.not.match(/[\u0000-\u001f\u007f-\u009f\u202e]/)
    expect(line.length).to.be.below(300)
    expect(namedList(['fork'], 100)).to.equal('fork')
    expect(namedList(Array.from({ length: 10 }, (_, i) => `e${i}`), 100, ' | ')).to.equal('e0 | e1 | e2 | e3 | e4 | e5 | e6 | e7 | e8 | e9')
    expect(namedList(Array.from({ length: 11 }, (_, i) => `e${i}`), 100, ' | ')).to.match(/ \| e9 \| … and 1 more$/)
  })

  it('a save changing 3,000 entries, 30 failing their start, logs two bounded lines that count them', async () => {
    const watch = `- id: watch\n  name: '@cordis-subagents/config-watch'\n  config:\n    debounce: 50\n    settleTimeout: 1000\n`
    app = await startTestApp(`${appConfig({ watch: false })}${watch}`)
    // A plugin that fails its start with a long, many-line error (each is kept as its first line, cut at 300: reloader.ts).
    const plugin = join(app.dir, 'failing-plugin.mjs')
    const apply = `export function apply() {\n  throw new Error('cannot start: ' + 'y'.repeat(2000) + '\\nsecond line')\n}\n`
    writeFileSync(plugin, `export const name = 'failing'\nexport const reusable = true\n${apply}`)
    let entries = ''
    // The first 30 start (and fail); the others are added disabled, which changes them as much and costs no start.
    for (let i = 0; i < ENTRIES; i++) entries += `- id: "${idOf(i)}"\n  name: '${plugin}'\n${i < FAILING ? '' : '  disabled: true\n'}`
    const next = app.nextCheck(30_000)
    let errors = 0
    const logs = await logsOf(async () => {
      writeFileSync(app!.file, `${appConfig({ watch: false })}${watch}${entries}`)
      const result = await next
      expect(result).to.deep.include({ status: 'applied' })
      expect(result.status === 'applied' && result.changed.length).to.equal(ENTRIES)
      // The ones reported within settleTimeout (on an idle machine, all of them).
      errors = result.status === 'applied' ? result.errors.length : 0
    })
    expect(errors).to.be.above(10)
    const reloading = logs.filter((record) => record.content.includes(' changed: reloading '))
    const failed = logs.filter((record) => record.content.includes(' reloaded, with errors '))
    expect([reloading.length, failed.length]).to.deep.equal([1, 1])
    for (const [{ content }, count] of [[reloading[0]!, ENTRIES], [failed[0]!, errors]] as const) {
      expect(content).to.not.include('\n')
      expect(content).to.not.match(/[\u0000-\u001f]/)
      expect(content.length).to.be.below(BOUND)
      expect(content.endsWith(` … and ${(count - 10).toLocaleString('en-US')} more`)).to.equal(true)
    }
    expect(reloading[0]!.content).to.include(`changed: reloading first forged: line, e00001${'n'.repeat(94)}…, e00002`)
    expect(failed[0]!.content).to.match(/: cannot start: y+… \| cannot start: y+… \| /)
  })

  it('a refused save whose reason quotes a huge id on many lines logs it on one line, cut', async () => {
    app = await startTestApp()
    // 20,000 characters: past ~50,000, lineOfEntry's pattern is too large for V8 (reported CONFIG_UNREADABLE, a defect of its own).
    const id = `dup\\n${'z'.repeat(20_000)}`
    const twice = `- id: "${id}"\n  name: '@cordis-subagents/tools'\n  disabled: true\n`.repeat(2)
    const next = app.nextCheck()
    const logs = await logsOf(async () => {
      writeFileSync(app!.file, `${appConfig()}${twice}`)
      expect(await next).to.deep.include({ status: 'rejected', code: 'CONFIG_SHAPE' })
    })
    const refused = logs.filter((record) => record.content.includes('[CONFIG_SHAPE]'))
    expect(refused).to.have.length(1)
    expect(refused[0]!.content).to.not.include('\n')
    expect(refused[0]!.content.length).to.be.below(BOUND)
    expect(refused[0]!.content).to.match(/: id "dup z+… \[CONFIG_SHAPE\]\. The running configuration is kept; fix the file/)
  })
})
