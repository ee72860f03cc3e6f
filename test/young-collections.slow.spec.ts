import { expect } from 'chai'
import { describeResult, runCommand } from '../scripts/support/run-command.js'
import { ROOT } from './helpers.js'

// What a delegation leaves to V8's young-generation collector: bytes, not time, so a loaded machine does not move them.
// A background delegation (section 10's start + subagent_wait) is run 15,000 times after a warm-up in a process of its
// own under --trace-gc-nvp (bench/profile/young-survivors.ts --json). Objects that die young cost a scavenge nothing;
// what a scavenge promotes to the old generation is copied twice and freed only by a full collection. A parent agent
// kept through young collections (by a WeakMap whose value names it, or by a literal V8 made old from birth that names it)
// promoted 17–19 % of everything a background delegation allocates; with neither it is about 5 %.

interface YoungFigures { kind: string; scavenges: number; allocatedMB: number; promotedMB: number; pauseUs: number }

async function youngFigures(kind: string, runs: number): Promise<YoungFigures> {
  const args = ['--import', 'tsx', '--conditions=cordis-subagents-source', 'bench/profile/young-survivors.ts', kind, '--runs', String(runs), '--json']
  const result = await runCommand(process.execPath, args, { cwd: ROOT, timeoutMs: 240_000, maxOutput: 64 * 1024 })
  if (result.code !== 0) throw new Error(describeResult(`young-survivors.ts ${kind}`, result))
  return JSON.parse(result.stdout.trim().split('\n').pop()!) as YoungFigures
}

describe('young collections: what a background delegation leaves to the old generation', function () {
  this.timeout(300_000)

  it('a background delegation promotes at most a tenth of what it allocates (its parent dies young)', async () => {
    const figures = await youngFigures('background', 15_000)
    expect(figures.scavenges, JSON.stringify(figures)).to.be.at.least(20)
    expect(figures.promotedMB / figures.allocatedMB, JSON.stringify(figures)).to.be.at.most(0.1)
  })
})
