// A FIFO renamed over cordis.yml (mkfifo is a subprocess, hence the slow tier): refused without
// opening it for a blocking read, so later saves are still seen and the app still stops.
import { execFile } from 'node:child_process'
import { renameSync } from 'node:fs'
import { promisify } from 'node:util'
import { expect } from 'chai'
import { appConfig, renameSave, startTestApp, type TestApp } from './app.js'

const run = promisify(execFile)

describe('config-watch and a FIFO under the name', function () {
  this.timeout(60_000)
  let app: TestApp | undefined

  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('refuses it (CONFIG_NOT_A_FILE), keeps the running config, and applies the next valid save', async () => {
    app = await startTestApp()
    await run('mkfifo', [`${app.file}.fifo`])
    renameSync(`${app.file}.fifo`, app.file)
    const result = await app.nextCheck()
    expect(result).to.deep.include({ status: 'rejected', code: 'CONFIG_NOT_A_FILE' })
    expect(result.status === 'rejected' && result.reason).to.equal(
      'it is a FIFO (named pipe), not a regular file; put a regular file (or a symlink to one) under that name')
    expect(app.changes).to.deep.equal([])
    renameSave(app.file, appConfig({ fork: '    description: after the fifo\n' }))
    expect(await app.nextCheck()).to.deep.include({ status: 'applied', changed: ['fork'] })
    expect(app.description('subagent_fork')).to.include('Runs on: after the fifo.')
  })
})
