// The run log's path is opened, not trusted: what is not a regular file this store could have written (a symbolic
// link, say to /dev/zero; a directory; a file far past the log's bound, such as a sparse one) is refused at once with
// CHECKPOINT_RUN_LOG naming the path, rather than read without end. A FIFO: run-log-fifo.slow.spec.ts.
import { closeSync, mkdirSync, mkdtempSync, openSync, ftruncateSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { RunLog } from '../src/run-log.js'

function refusal(file: string): Error & { code?: string } {
  try {
    RunLog.open(file).log.close()
  } catch (error) {
    return error as Error & { code?: string }
  }
  throw new Error(`RunLog.open(${file}) did not refuse it`)
}

describe('checkpoints: the run log file is checked before it is read', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-run-log-file-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('refuses a symbolic link (to /dev/zero) without reading it', () => {
    const file = join(dir, 'zero.runlog')
    symlinkSync('/dev/zero', file)
    const error = refusal(file)
    expect(error.code).to.equal('CHECKPOINT_RUN_LOG')
    expect(error.message).to.contain(file).and.contain('symbolic link').and.contain('runLog')
  })

  it('refuses a directory', () => {
    const file = join(dir, 'dir.runlog')
    mkdirSync(file)
    expect(refusal(file)).to.include({ code: 'CHECKPOINT_RUN_LOG' })
  })

  it('refuses a file far past the bound a run log can reach (a 1 GiB sparse file) without reading it', () => {
    const file = join(dir, 'sparse.runlog')
    writeFileSync(file, '{"p":1,"s":1,"o":[[1,"b",0,{"state":"settled"}]]}\n')
    const fd = openSync(file, 'r+')
    ftruncateSync(fd, 1024 ** 3)
    closeSync(fd)
    const started = performance.now()
    const error = refusal(file)
    expect(error.code).to.equal('CHECKPOINT_RUN_LOG')
    expect(error.message).to.contain(file).and.contain('1073741824 bytes')
    expect(performance.now() - started, 'refused without reading it').to.be.below(1000)
  })

  it('still opens (and creates) a regular file', () => {
    const { log, unwritten } = RunLog.open(join(dir, 'new', 'store.runlog'))
    log.close()
    expect(unwritten).to.deep.equal([])
  })
})
