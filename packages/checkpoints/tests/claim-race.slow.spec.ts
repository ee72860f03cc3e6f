// The task-key claim raced by two processes of one host name on one PostgreSQL database: exactly one wins.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createInterface, type Interface } from 'node:readline'
import { expect } from 'chai'
import type { Claim } from '@cordis-subagents/checkpoints'
import { freshPostgres } from './support.js'

const CLAIMER = fileURLToPath(new URL('./fixtures/claimer.ts', import.meta.url))

interface Claimer {
  child: ChildProcess
  lines: Interface
  next(): Promise<string>
}

function startClaimer(runId: string): Claimer {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', CLAIMER, runId], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })
  const iterator = lines[Symbol.asyncIterator]()
  return {
    child,
    lines,
    async next() {
      const timeout = setTimeout(() => child.kill('SIGKILL'), 30_000)
      try {
        const { value, done } = await iterator.next()
        if (done) throw new Error(`claimer ${runId} exited before answering`)
        return value
      } finally {
        clearTimeout(timeout)
      }
    },
  }
}

describe('task-key claim across two processes on one PostgreSQL database', function () {
  this.timeout(90_000)
  let claimers: Claimer[] = []

  afterEach(async () => {
    for (const { child } of claimers) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await once(child, 'exit')
      }
    }
    claimers = []
  })

  for (const round of [1, 2]) {
    it(`exactly one of two processes of one host claims the same key (round ${round})`, async () => {
      await freshPostgres()
      claimers = [startClaimer(`a${round}`), startClaimer(`b${round}`)]
      expect(await Promise.all(claimers.map((c) => c.next()))).to.deep.equal(['ready', 'ready'])
      for (const { child } of claimers) child.stdin!.write('go\n')
      const claims = (await Promise.all(claimers.map((c) => c.next()))).map((line) => JSON.parse(line) as Claim)
      expect(claims.filter((claim) => claim.claimed)).to.have.length(1)
      expect(claims[0].runId).to.equal(claims[1].runId)
      expect(claims[0].key).to.equal(claims[1].key)
      await Promise.all(claimers.map(({ child }) => child.exitCode === null ? once(child, 'exit') : undefined))
      expect(claimers.map(({ child }) => child.exitCode)).to.deep.equal([0, 0])
    })
  }
})
