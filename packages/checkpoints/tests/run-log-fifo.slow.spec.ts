// A FIFO at the run log's path: opening it to read would wait for a writer for ever and hang the store's start.
// It is refused at once with CHECKPOINT_RUN_LOG (slow tier: `mkfifo` is a subprocess).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { RunLog } from '../src/run-log.js'

describe('checkpoints: a FIFO at the run log path', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-run-log-fifo-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('is refused with CHECKPOINT_RUN_LOG naming the path, not waited on', () => {
    const file = join(dir, 'store.db.runlog')
    execFileSync('mkfifo', [file])
    let error: (Error & { code?: string }) | undefined
    try {
      RunLog.open(file).log.close()
    } catch (caught) {
      error = caught as Error & { code?: string }
    }
    expect(error?.code).to.equal('CHECKPOINT_RUN_LOG')
    expect(error?.message).to.contain(file).and.contain('not a regular file')
  })
})
