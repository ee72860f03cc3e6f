// Hostile answers from a hand-written remote (tests/fixtures/hostile-remote.ts), in both protocol
// versions' wire formats: each must end bounded, with a clear error or a bounded result.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { expect } from 'chai'
import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { MAX_ARTIFACTS } from '../src/artifact-text.js'
import { MAX_SSE_LINE_BYTES } from '../src/bounded-fetch.js'
import { type HostileRemote, startHostileRemote, type HostileOptions } from './fixtures/hostile-remote.js'
import { provider, request, within } from './helpers.js'

const BOUND = 20_000

/** 20,000 artifact texts of 80 characters (1.6 MB in all). */
const TEXTS = Array.from({ length: 20_000 }, (_, i) => `artifact ${String(i).padStart(5, '0')} `.padEnd(80, '.'))
/** What the output must be: 63 artifacts apart, the rest joined to the 64th. */
const JOINED = [...TEXTS.slice(0, MAX_ARTIFACTS - 1), TEXTS.slice(MAX_ARTIFACTS - 1).join('')].join('\n')

/**
 * Runs `work` and returns its result with the longest event-loop block seen meanwhile (ms). The
 * bound asserted on it is generous (1 s, where the quadratic code blocked for tens of seconds).
 */
async function longestBlock<T>(work: () => Promise<T>): Promise<{ value: T; blockedMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 })
  histogram.enable()
  try {
    const value = await work()
    return { value, blockedMs: histogram.max / 1e6 }
  } finally {
    histogram.disable()
  }
}

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

    async function delegate(url: string, options = {}): Promise<SubagentResult> {
      const a2a = await provider(url, { maxOutputBytes: 4 * 1024 * 1024, requestTimeout: 10_000, ...options })
      const handle = await within(a2a.start(request()), 60_000, 'start')
      const result = await within(handle.result, 60_000, 'result')
      await within(handle.dispose(), BOUND, 'dispose')
      return result
    }

    it('issue 26.1: one 1.6 MB stream event carrying 20,000 artifacts is folded in linear time (no long block), every text kept', async () => {
      const remote = await serve({
        streaming: true,
        handler: (_rpc, res, t) => {
          const event = t.sse(res)
          event(t.task('t-1', 'working', TEXTS.map((text, i) => t.artifact(`a${i}`, [text]))))
          event(t.statusUpdate('t-1', 'completed'))
          res.end()
        },
      })
      const { value: result, blockedMs } = await longestBlock(() => delegate(remote.url))
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(result.output).to.equal(JOINED)
      expect(blockedMs, `the event loop was blocked for ${blockedMs} ms`).to.be.below(1_000)
    })

    it('issue 26.1: one poll answer with 20,000 artifacts is folded in linear time', async () => {
      const remote = await serve({
        streaming: false,
        handler: (rpc, res, t) => {
          if (rpc.call === 'send') t.answer(res, version === '1.0' ? t.task('t-1', 'working') : t.taskBody('t-1', 'working'))
          else t.answer(res, t.taskBody('t-1', 'completed', TEXTS.map((text, i) => t.artifact(`a${i}`, [text]))))
        },
      })
      const { value: result, blockedMs } = await longestBlock(() => delegate(remote.url))
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(result.output).to.equal(JOINED)
      expect(blockedMs, `the event loop was blocked for ${blockedMs} ms`).to.be.below(1_000)
    })

    it('issue 26.1: 20,000 small appends cost linear work; past maxOutputBytes the text is cut once and said so', async () => {
      const remote = await serve({
        streaming: true,
        handler: (_rpc, res, t) => {
          const event = t.sse(res)
          event(t.task('t-1', 'working'))
          for (let i = 0; i < TEXTS.length; i++) event(t.artifactUpdate('t-1', 'answer', TEXTS[i], i > 0))
          event(t.statusUpdate('t-1', 'completed'))
          res.end()
        },
      })
      const { value: full, blockedMs } = await longestBlock(() => delegate(remote.url))
      expect(full.stopReason, full.diagnostic).to.equal('completed')
      expect(full.output).to.equal(TEXTS.join(''))
      expect(blockedMs, `the event loop was blocked for ${blockedMs} ms`).to.be.below(1_000)
      const cut = await delegate(remote.url, { maxOutputBytes: 1_000_000 })
      expect(cut.output).to.equal(TEXTS.join('').slice(0, 1_000_000))
      expect(cut.diagnostic).to.match(/cut at 1000000 bytes \(maxOutputBytes\)/)
    })

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
