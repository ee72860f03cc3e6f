import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { fakeParent, fixtureProcesses, fixtureProvider } from './helpers.js'

// The ACP provider against the provider contract, over the fixture agent in real subprocesses:
// `stream` completes a turn on its own, `slow` works until session/cancel and honours it.
describeProviderContract('acp (fixture agent subprocesses)', () => ({
  completing: fixtureProvider('stream'),
  waiting: fixtureProvider('slow'),
  parent: fakeParent(),
  assertIdle() {
    const left = fixtureProcesses()
    if (left.length) throw new Error(`fixture agent processes still running: ${left.map((entry) => `${entry.pid} ${entry.args}`).join('; ')}`)
  },
}))
