/// <reference types="mocha" />
// What the ACP SDK writes with raw console.error about an agent's junk (tests/fixtures/sdk-junk.mjs): it goes to the
// provider's logger under a log budget (10 lines a minute, the rest summarised), during a run and while a pooled process
// waits with no run; never to the host's console.
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { Logger } from 'cordis'
import { type AcpProvider, createAcpProvider } from '../src/index.js'
import { assertNoLeftovers, FAST, logger, request, until } from './helpers.js'

const JUNK = fileURLToPath(new URL('./fixtures/sdk-junk.mjs', import.meta.url))
const N = 2_000

interface Captured {
  /** The provider's log lines (warn and above). */
  lines: string[]
  /** What reached the host's console.error / console.warn. */
  printed: string[]
}

/** Runs `body` with the loggers and the host's console.error / console.warn recorded (set before any process starts). */
async function captured(body: (seen: Captured) => Promise<void>): Promise<Captured> {
  const seen: Captured = { lines: [], printed: [] }
  const targets = Logger.targets.splice(0, Logger.targets.length, {
    levels: { base: 2 },
    record: (record) => { seen.lines.push(record.content) },
  })
  const saved = { error: console.error, warn: console.warn }
  console.error = (...args: unknown[]) => { seen.printed.push(args.map(String).join(' ').slice(0, 200)) }
  console.warn = console.error
  try {
    await body(seen)
  } finally {
    Object.assign(console, saved)
    Logger.targets.splice(0, Logger.targets.length, ...targets)
  }
  return seen
}

const sdkLines = (seen: Captured) => seen.lines.filter((line) => line.includes('ACP SDK'))
const summaries = (seen: Captured) => sdkLines(seen).filter((line) => line.includes('not logged'))

function junkProvider(mode: string, options = {}): AcpProvider {
  return createAcpProvider({ command: process.execPath, args: [JUNK, mode, String(N)], logger, ...FAST, name: 'junk', ...options })
}

describe('provider-acp: the ACP SDK\'s console under a log budget', function () {
  this.timeout(60_000)

  afterEach(() => assertNoLeftovers())

  it('an agent answering 2,000 requests never sent makes 10 warn lines and one summary, not 2,000 lines', async () => {
    const provider = junkProvider('during-prompt')
    const seen = await captured(async (seen) => {
      const run = await provider.start(request())
      expect((await run.result).output).to.equal('done')
      await run.dispose()
      await provider.reaped()
      // Once the process is gone, what the budget counted is summarised. (Before the fix, every line was logged.)
      await until(() => summaries(seen).length || sdkLines(seen).length > 11, 'the summary once the process is gone', 20_000)
      await provider.stop()
    })
    const lines = sdkLines(seen)
    expect(lines).to.have.length(11)
    expect(lines.slice(0, 10)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `junk: ACP SDK: Got response to unknown request ${1_000_000 + i}`))
    expect(lines.slice(10)).to.deep.equal([`junk: ACP SDK: ${N - 10} more lines like this were not logged (log budget: 10 per 60 s)`])
    expect(seen.printed.filter((line) => line.includes('unknown request'))).to.deep.equal([])
  })

  it('a pooled process no run holds, flooding junk (one 1 MiB id), reaches the logger under the budget, never the raw console', async () => {
    const provider = junkProvider('after-turn', { reuse: true, idleTimeout: 30_000 })
    const seen = await captured(async (seen) => {
      const run = await provider.start(request())
      expect((await run.result).output).to.equal('done')
      await run.dispose()
      // The agent writes its junk ~200 ms after its turn, kept by the pool with no run, then exits; once its connection
      // has read everything, the budget's count is summarised. (Before the fix, the junk reached console.error raw.)
      await until(() => summaries(seen).length || seen.printed.length > N, 'the junk, summarised or printed', 20_000)
      await provider.stop()
    })
    expect(seen.printed.filter((line) => line.includes('unknown request')), 'raw console calls').to.deep.equal([])
    const lines = sdkLines(seen)
    expect(lines).to.have.length(11)
    expect(lines.slice(0, 10)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `junk: ACP SDK: Got response to unknown request ${2_000_000 + i}`))
    expect(lines[10]).to.equal(`junk: ACP SDK: ${N + 1 - 10} more lines like this were not logged (log budget: 10 per 60 s)`)
  })

  it('a provider stopped with nothing alive leaves console.error as it found it', async () => {
    const provider = junkProvider('during-prompt', { reuse: true })
    await captured(async () => {
      const before = console.error
      const run = await provider.start(request())
      expect(console.error, 'routed while the process lives').to.not.equal(before)
      await run.result
      await run.dispose()
      await provider.stop()
      await until(() => console.error === before, 'console.error restored after stop()', 10_000)
    })
  })
})
