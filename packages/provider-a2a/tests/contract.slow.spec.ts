import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { startScriptedServer, type ScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { fakeParent, provider, until } from './helpers.js'

// The A2A provider against the shared provider contract, over a server built from the SDK's own
// server classes on 127.0.0.1 (A2A 1.0: @a2a-js/sdk 1.x; A2A 0.3: the 0.3 SDK as `a2a-sdk-v03`):
// `complete` finishes on its own, `wait` works until the cancel. Nothing left running = no
// execution still running on the server.
for (const version of ['1.0', '0.3'] as const) for (const streaming of [true, false]) {
  let server: ScriptedServer | undefined
  describeProviderContract(`a2a (A2A ${version} SDK server, ${streaming ? 'streaming' : 'non-streaming: send + polls'})`, async () => {
    server = version === '1.0' ? await startScriptedServer({ streaming }) : await startScriptedServerV03({ streaming })
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
