import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { startScriptedServer, type ScriptedServer } from './fixtures/scripted-server.js'
import { fakeParent, provider, until } from './helpers.js'

// The A2A provider against the shared provider contract, over a server built from the SDK's own
// server classes on 127.0.0.1: `complete` finishes on its own, `wait` works until CancelTask.
// Nothing left running = no execution still running on the server.
for (const streaming of [true, false]) {
  let server: ScriptedServer | undefined
  describeProviderContract(`a2a (SDK server, ${streaming ? 'streaming' : 'non-streaming: send + polls'})`, async () => {
    server = await startScriptedServer({ streaming })
    const remote = await provider(server.url)
    return {
      completing: remote,
      waiting: remote,
      parent: fakeParent(),
      prompts: { completing: 'complete', waiting: 'wait' },
      async assertIdle() {
        // The server's executor returns right after it published `canceled`: allow it that moment.
        await until(() => server!.running() === 0, `executions still running on the remote: ${server!.running()}`, 2_000)
      },
      teardown: () => server?.close(),
    }
  })
}
