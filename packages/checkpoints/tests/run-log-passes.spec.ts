// The run log's file over passes (run-log.ts): once all it holds is written it replays nothing and is
// written again from its start, not cut; what an earlier, longer pass left after the last line is never
// replayed; a marker drops the records it covers; a file of the earlier format (no pass, cut instead)
// still replays.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { RunLog, unwrittenIn } from '../src/run-log.js'
import { type DirectWriter, encodeOp, replayOps, type WriteOp } from '../src/write-ops.js'
import { modelDatabase } from './model-database.js'

const settle = (id: string, result: string): WriteOp => ({ kind: 'update', id, guard: false, changes: { state: 'settled', result } })
const ids = (file: string) => unwrittenIn(file).map((ops) => ops.map((op) => op.id))

describe('checkpoints: the run log over passes', () => {
  let dir: string
  let n = 0
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-run-log-passes-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('replays nothing once all it holds is written, keeps its pages, and never replays what an earlier pass left', () => {
    const file = join(dir, `${++n}.runlog`)
    const { log, unwritten } = RunLog.open(file)
    expect(unwritten).to.deep.equal([])
    try {
      // A long first pass: three records whose results fill the file.
      for (const id of ['a', 'b', 'c']) log.append([encodeOp(settle(id, id.repeat(500)))])
      expect(ids(file)).to.deep.equal([['a'], ['b'], ['c']])
      const long = statSync(file).size
      log.written(3)
      expect(ids(file), 'all written: nothing to replay').to.deep.equal([])
      expect(statSync(file).size, 'not cut: the next pass writes over it').to.equal(long)
      // A second, shorter pass: the rest of the first pass's lines follow it in the file.
      const seq = log.append([encodeOp(settle('d', 'short'))])!
      expect(ids(file)).to.deep.equal([['d']])
      expect(unwrittenIn(file)[0][0]).to.deep.include({ kind: 'update', id: 'd', changes: { state: 'settled', result: 'short' } })
      log.append([encodeOp(settle('e', 'short'))])
      // A marker covers the records up to it.
      log.written(seq)
      expect(ids(file)).to.deep.equal([['e']])
      log.written(seq + 1)
      expect(ids(file)).to.deep.equal([])
    } finally {
      log.close()
    }
  })

  it('a record of the run before a start that stopped is written again at the next open, then the file is empty', () => {
    const file = join(dir, `${++n}.runlog`)
    const first = RunLog.open(file).log
    first.append([encodeOp(settle('x', 'x'.repeat(300)))])
    first.written(1)
    first.append([encodeOp(settle('y', 'y'))])
    first.close()
    const { log, unwritten } = RunLog.open(file)
    try {
      expect(unwritten.map((ops) => ops.map((op) => op.id))).to.deep.equal([['y']])
      log.clear()
      expect(statSync(file).size).to.equal(0)
    } finally {
      log.close()
    }
  })

  it('a file of the earlier format (lines without a pass, cut once written) still replays, a torn last line left out', () => {
    const file = join(dir, `${++n}.runlog`)
    const line = (seq: number, id: string) => `{"s":${seq},"o":[${encodeOp(settle(id, id))}]}\n`
    writeFileSync(file, `${line(1, 'a')}${line(2, 'b')}{"c":1}\n${line(3, 'c')}{"s":4,"o":[[1,"d",0,{"sta`)
    const { log, unwritten } = RunLog.open(file)
    log.close()
    expect(unwritten.map((ops) => ops.map((op) => op.id))).to.deep.equal([['b'], ['c']])
  })

  it('replayOps: a start record whose row exists lands as that row\'s update, its run\'s later records again after it; other runs once', async () => {
    const { rows, writer: model } = modelDatabase([])
    rows.set('a', { id: 'a', state: 'running' })
    rows.set('b', { id: 'b', state: 'running' })
    const batches: number[] = []
    const writer: DirectWriter = { ...model, run: (groups) => (batches.push(groups.length), model.run(groups)) }
    const insert = (id: string, given: Record<string, unknown>): WriteOp => ({ kind: 'insert', id, given: { id, ...given } })
    await replayOps(writer, [
      // a: its start (running) and its settle in one record, the row already there (its batch ran, then failed).
      insert('a', { state: 'running' }), settle('a', 'A'),
      // b: a start the settle was merged into, the row there as running.
      insert('b', { state: 'settled', result: 'B' }),
      // c: new, and written once.
      insert('c', { state: 'settled', result: 'C' }),
    ])
    expect(rows.get('a')).to.include({ state: 'settled', result: 'A' })
    expect(rows.get('b')).to.include({ state: 'settled', result: 'B' })
    expect(rows.get('c')).to.include({ state: 'settled', result: 'C' })
    // One batch of the four, then one more of a's and b's records from their start (an update, a's settle, b's update).
    expect(batches).to.deep.equal([4, 3])
  })
})
