import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const FIXTURE = fileURLToPath(new URL('./fixtures/broken-provider.contract.ts', import.meta.url))

interface Report {
  stats: { passes: number; failures: number }
  failures: Array<{ title: string; err: { message: string } }>
}

/** Runs the contract suite against a provider that breaks it, in a mocha process of its own. */
function runBrokenContract(): Promise<Report> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [fileURLToPath(new URL('../../../node_modules/mocha/bin/mocha.js', import.meta.url)), '--reporter', 'json', FIXTURE],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout) => {
        try {
          resolve(JSON.parse(stdout.slice(stdout.indexOf('{'))) as Report)
        } catch {
          reject(error ?? new Error(`mocha printed no JSON report: ${stdout.slice(0, 500)}`))
        }
      })
  })
}

describe('the provider contract suite catches broken providers', function () {
  this.timeout(60_000)

  it('reports an ignored abort, a rejecting result and a cancel/dispose that never settles', async () => {
    const report = await runBrokenContract()
    const failed = new Map(report.failures.map((failure) => [failure.title, failure.err.message]))
    expect(failed.get('a request whose signal is already aborted is rejected, with nothing left running'))
      .to.contain('must reject a request whose signal is already aborted')
    expect(failed.get('completes on its own: a well-formed result with output, usage and work in shape'))
      .to.contain('run.result rejected')
    expect(failed.get('cancel() ends a working run with a cancelled stop reason; a second cancel is harmless'))
      .to.contain('did not settle within 300 ms')
    expect(failed.get('dispose() of a working run is idempotent, awaited and settles the result; nothing is left running'))
      .to.contain('did not settle within 300 ms')
  })
})
