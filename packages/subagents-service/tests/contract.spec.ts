import { describeProviderContract, FakeProvider } from '@cordis-subagents/subagents-service/testing'
import { type Harness, setup } from './helpers.js'

// The kit's own fake provider keeps the contract (its runs settle when cancelled or disposed).
let h: Harness | undefined
let providers: FakeProvider[] = []

describeProviderContract('FakeProvider (the kit)', async () => {
  h = await setup()
  const completing = new FakeProvider('fake-completing')
  completing.onRun = (run) => {
    run.update('text', 'working')
    run.complete('done', { usage: { inputTokens: 3, outputTokens: 2 } })
  }
  const waiting = new FakeProvider('fake-waiting')
  providers = [completing, waiting]
  return {
    completing,
    waiting,
    parent: h.root,
    assertIdle() {
      for (const provider of providers) {
        for (const run of provider.runs) {
          if (!run.outcome.settled || run.disposeCalls === 0) throw new Error(`fake run ${run.request.runId} is still live`)
        }
      }
    },
    teardown: () => h?.stop(),
  }
})
