// What a start replays of the run log is checked line by line and op by op (run-log-lines.ts): JSON that is not a
// record or a marker, an op of the wrong shape, an unknown column, a state or turn no write stores, are reported
// (CHECKPOINT_INVALID, the file and line number) and skipped, and the rest is replayed; a replayed change of state is
// always guarded, so a line never moves a settled run back to running.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { format } from 'node:util'
import { expect } from 'chai'
import { unwrittenIn } from '../src/run-log.js'
import { startStore } from './support.js'

const settle = (id: string, seq: number) =>
  `{"p":1,"s":${seq},"o":[[1,"${id}",0,{"id":"${id}","state":"settled","result":"done-${id}","host":"test-host","instance":"x","updatedAt":${Date.now()}}]]}`

describe('checkpoints: run log lines are checked before they are replayed', () => {
  let dir: string
  let n = 0
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-run-log-lines-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** What `unwrittenIn` gives of a file of `lines`: the ids of the records replayed, and the warnings. */
  function replayed(lines: string[]): { ids: string[][]; warnings: string[] } {
    const file = join(dir, `${++n}.runlog`)
    writeFileSync(file, lines.join('\n') + '\n')
    const warnings: string[] = []
    const ids = unwrittenIn(file, { warn: (...args: unknown[]) => warnings.push(format(...args)) }).map((ops) => ops.map((op) => op.id))
    for (const warning of warnings) expect(warning).to.contain('CHECKPOINT_INVALID').and.contain(file)
    return { ids, warnings }
  }

  for (const [what, bad] of [
    ['a number', '5'],
    ['a string', '"hi"'],
    ['a record without ops', '{"p":1,"s":2}'],
    ['ops that are not a list', '{"p":1,"s":2,"o":7}'],
    ['an insert without columns', '{"p":1,"s":2,"o":[[0,null]]}'],
    ['an op of no known kind', '{"p":1,"s":2,"o":[[7,"c"]]}'],
    ['an unknown column', '{"p":1,"s":2,"o":[[1,"c",0,{"bogus":1}]]}'],
    ['an unknown state and a negative turn',
      '{"p":1,"s":2,"o":[[0,{"id":"z","path":"root/z","root":"root","provider":"spawn","state":"nonsense","turn":-3,"host":"h","instance":"x","updatedAt":1}]]}'],
    ['a negative turn', '{"p":1,"s":2,"o":[[1,"c",0,{"turn":-3}]]}'],
    ['usage that is not JSON', '{"p":1,"s":2,"o":[[1,"c",0,{"usage":"{\\"in"}]]}'],
  ] as const) {
    it(`skips and reports a line with ${what}, and replays the others`, () => {
      const { ids, warnings } = replayed([settle('a', 1), bad, settle('b', 3)])
      expect(ids).to.deep.equal([['a'], ['b']])
      expect(warnings).to.have.length(1)
      expect(warnings[0]).to.contain('line 2')
    })
  }

  it('skips a bad first line and still takes the pass from the next', () => {
    const { ids, warnings } = replayed(['5', settle('b', 1)])
    expect(ids).to.deep.equal([['b']])
    expect(warnings[0]).to.contain('line 1')
  })

  it('at start: a bad op does not roll back the replay, and a logged change never moves a settled run back', async () => {
    const file = join(dir, `${++n}.db`)
    let app = await startStore({ kind: 'sqlite', path: file })
    try {
      for (const id of ['a', 'b']) await app.checkpoints.save({ id, path: `root/${id}`, parent: 'root', provider: 'spawn', state: 'running' })
      await app.checkpoints.save({ id: 'a', state: 'settled', result: 'done-a' })
    } finally {
      await app.stop()
    }
    writeFileSync(`${file}.runlog`, [
      '{"p":1,"s":1,"o":[[1,"a",0,{"id":"a","state":"running","host":"test-host","instance":"x","updatedAt":1}]]}',
      '{"p":1,"s":2,"o":[[1,"c",0,{"bogus":1}]]}',
      settle('b', 3),
    ].join('\n') + '\n')
    app = await startStore({ kind: 'sqlite', path: file })
    try {
      expect(await app.checkpoints.load('a')).to.include({ state: 'settled', result: 'done-a' })
      expect(await app.checkpoints.load('b')).to.include({ state: 'settled', result: 'done-b' })
    } finally {
      await app.stop()
    }
  })
})
