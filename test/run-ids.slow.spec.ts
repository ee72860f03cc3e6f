// Run ids are the checkpoint store's primary key, which hosts on one PostgreSQL database share: two host processes
// that load the service in the same millisecond must not number their runs alike (each id was `run-<start time>-<n>`).
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { describeResult, runCommand } from '../scripts/support/run-command.js'
import { ROOT } from './helpers.js'

const PROBE = fileURLToPath(new URL('./fixtures/run-ids/probe.ts', import.meta.url))

async function firstRunId(pinnedNow: number): Promise<string> {
  const result = await runCommand(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', PROBE], {
    cwd: ROOT, timeoutMs: 60_000, maxOutput: 64 * 1024, env: { ...process.env, PIN_NOW: String(pinnedNow) },
  })
  if (result.code !== 0) throw new Error(describeResult('run-ids probe', result))
  return result.stdout.trim()
}

describe('run ids of two host processes started in the same millisecond', function () {
  this.timeout(120_000)

  it('differ: the id carries randomness of its process, not only its start time and a counter', async () => {
    const now = Date.now()
    const [a, b] = await Promise.all([firstRunId(now), firstRunId(now)])
    expect(a).to.match(/^run-[0-9a-z-]+$/)
    expect(b).to.match(/^run-[0-9a-z-]+$/)
    expect(a, 'two processes, one millisecond').to.not.equal(b)
  })
})
