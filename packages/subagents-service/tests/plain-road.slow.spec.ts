/// <reference types="mocha" />
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect } from 'chai'

// With no durable store loaded, a plain delegation's road never enters src/durable/: observed with
// V8's own call counts (the inspector's precise coverage) in a process of its own, over a real
// Context without ctx.checkpoints (fixtures/plain-road-probe.ts).

const probe = fileURLToPath(new URL('./fixtures/plain-road-probe.ts', import.meta.url))

async function durableCalls(...args: string[]): Promise<{ checkpoints: boolean; stopReason: string; durable: string[] }> {
  const { stdout } = await promisify(execFile)(process.execPath,
    ['--import', 'tsx', '--conditions=cordis-subagents-source', '--no-experimental-require-module', probe, ...args], { timeout: 60_000 })
  return JSON.parse(stdout.trim().split('\n').at(-1)!)
}

describe('the road of a plain delegation', function () {
  this.timeout(60_000)

  it('without ctx.checkpoints, never calls into src/durable/', async () => {
    expect(await durableCalls()).to.deep.equal({ checkpoints: false, stopReason: 'completed', durable: [] })
  })

  it('the probe sees durable/ once a journal is in place (so the empty list above means something)', async () => {
    const { stopReason, durable } = await durableCalls('journal')
    expect(stopReason).to.equal('completed')
    expect(durable.some((call) => call.startsWith('journal.ts'))).to.equal(true)
  })
})
