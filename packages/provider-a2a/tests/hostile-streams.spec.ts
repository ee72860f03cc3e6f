// Hostile answers from a hand-written remote (tests/fixtures/hostile-remote.ts), in both protocol
// versions' wire formats: each must end bounded, with a clear error or a bounded result.
import { expect } from 'chai'
import { MAX_SSE_LINE_BYTES } from '../src/bounded-fetch.js'
import { type HostileRemote, startHostileRemote, type HostileOptions } from './fixtures/hostile-remote.js'
import { provider, request, within } from './helpers.js'

const BOUND = 20_000

for (const version of ['1.0', '0.3'] as const) {
  describe(`provider-a2a against a hostile A2A ${version} remote`, function () {
    this.timeout(60_000)
    const remotes: HostileRemote[] = []
    afterEach(async () => {
      await Promise.all(remotes.splice(0).map((remote) => remote.close()))
    })
    async function serve(options: Omit<HostileOptions, 'version'>) {
      const remote = await startHostileRemote({ version, ...options })
      remotes.push(remote)
      return remote
    }

    it('one stream line longer than 4 MiB ends the run as an error naming the limit', async () => {
      const remote = await serve({
        streaming: true,
        handler: (rpc, res, t) => {
          const event = t.sse(res)
          event(t.task('t-1', 'working'))
          res.write(`data: ${'x'.repeat(MAX_SSE_LINE_BYTES + 1024)}`)
        },
      })
      const a2a = await provider(remote.url)
      const handle = await within(a2a.start(request()), BOUND, 'start')
      const result = await within(handle.result, BOUND, 'result')
      await within(handle.dispose(), BOUND, 'dispose')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.match(/one stream event \(line\) of more than 4194304 bytes/)
    })
  })
}
