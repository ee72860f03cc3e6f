import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { fakeParent, fixtureProcesses, fixtureProvider, reapAll, until } from './helpers.js'
import { type AcpProvider, MAX_QUEUED_FOLLOW_UPS } from '../src/index.js'

// The ACP provider against the provider contract, over the fixture agent in real subprocesses:
// `stream` completes a turn on its own, `slow` works until session/cancel and honours it.
// A run is handed back at the end of its turn and its process is stopped in the background:
// "nothing left running" holds once the provider's pending reaps are done (`reaped()`).
describeProviderContract('acp (fixture agent subprocesses)', () => ({
  completing: fixtureProvider('stream'),
  waiting: fixtureProvider('slow'),
  parent: fakeParent(),
  // `steer` works 500 ms in its first turn, then answers each follow-up (a new session/prompt) naming all so far.
  steering: { provider: fixtureProvider('steer'), prompt: 'work, then take follow-ups', maxQueued: MAX_QUEUED_FOLLOW_UPS },
  async assertIdle() {
    await reapAll()
    const left = fixtureProcesses()
    if (left.length) throw new Error(`fixture agent processes still running: ${left.map((entry) => `${entry.pid} ${entry.args}`).join('; ')}`)
  },
}), { steering: true })

// The same contract with the pool on (warm spares and reuse): after every run the only fixture
// processes alive are ones waiting in a pool, and stopping the pools leaves none.
for (const pool of [{ warm: true }, { reuse: true }, { warm: true, reuse: true, spares: 2 }]) {
  let providers: AcpProvider[] = []
  describeProviderContract(`acp with ${JSON.stringify(pool)} (fixture agent subprocesses)`, () => {
    providers = [fixtureProvider('stream', undefined, pool), fixtureProvider('slow', undefined, pool), fixtureProvider('steer', undefined, pool)]
    return {
      completing: providers[0],
      waiting: providers[1],
      parent: fakeParent(),
      steering: { provider: providers[2]!, prompt: 'work, then take follow-ups', maxQueued: MAX_QUEUED_FOLLOW_UPS },
      async assertIdle() {
        await Promise.all(providers.map((provider) => provider.reaped()))
        const waiting = new Set(providers.flatMap((provider) => provider.pool!.idlePids()))
        const busy = providers.reduce((sum, provider) => sum + provider.pool!.counts().busy, 0)
        if (busy) throw new Error(`${busy} pooled process(es) still serving a run`)
        const strays = fixtureProcesses().filter((entry) => !waiting.has(entry.pid) && !starting(entry.pid))
        if (strays.length) throw new Error(`fixture agent processes outside the pools: ${strays.map((entry) => `${entry.pid} ${entry.args}`).join('; ')}`)
      },
      async teardown() {
        await Promise.all(providers.map((provider) => provider.stop()))
        await until(() => fixtureProcesses().length === 0, 'no fixture process after the pools stopped', 5000)
      },
    }
  }, { steering: true })
  /** A spare still being spawned is the pool's too (not yet idle). */
  function starting(pid: number): boolean {
    return providers.some((provider) => provider.pool!.startingPids().includes(pid))
  }
}
