// After applying a changed file the Reloader waits up to `settleTimeout` for the changed entries to start; that bound is
// in-process time: a step of the OS wall clock (NTP, a VM resumed, `date -s`) neither ends the wait at once (forward)
// nor stretches it by the step (back). A stand-in loader whose changed entry never starts keeps the wait to its bound.
import { getEventListeners } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { withSteppedClock, within } from '@cordis-subagents/test-support'
import type { EntryOptions, LoaderView } from '../src/loader-view.js'
import { type CheckResult, Reloader } from '../src/reloader.js'

const HOUR = 3_600_000
const SETTLE = 300

describe('Reloader settle wait under a wall-clock step', () => {
  let dir: string
  let file: string

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-watch-settle-'))
    file = join(dir, 'cordis.json')
    writeFileSync(file, JSON.stringify([{ id: 'slow', name: 'slow-plugin' }]))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  /** Checks the file once with a loader whose entry `slow` never starts; the clock steps by `ms` once the wait began. */
  function checkStepped(ms: number, settleTimeout = SETTLE): Promise<{ result: CheckResult; waited: number; listeners: number }> {
    return withSteppedClock(async (step) => {
      const stop = new AbortController()
      let stepped = false
      let listeners = 0
      const ctx = {
        on: () => () => {},
        // Called first thing in each round of the wait, after its bound was taken.
        lifecycle: {
          flush: async () => {
            stepped ||= (step(ms), true)
            listeners = Math.max(listeners, getEventListeners(stop.signal, 'abort').length)
          },
        },
      } as unknown as Context
      const root = { data: [] as EntryOptions[], update: (data: EntryOptions[]) => void (root.data = data) }
      const slow = { options: { id: 'slow', name: 'slow-plugin' }, disabled: false, fork: undefined, _check: () => true }
      const loader = {
        ctx: {}, files: {}, store: {}, root,
        file: { name: file, type: 'application/json', trees: [], read: async () => undefined },
        entries: () => [slow],
        import: async () => ({}),
        unwrapExports: (exports: unknown) => exports,
        refresh: async () => {},
      } as unknown as LoaderView
      const reloader = new Reloader(ctx, loader, file, {
        maxBytes: 1024 * 1024, settleTimeout, onReloading: () => {}, onWithoutId: () => {},
      }, stop.signal)
      const started = performance.now()
      try {
        const result = await within(reloader.check(), 5_000 + settleTimeout, `a check bounded by settleTimeout ${settleTimeout} ms`)
        return { result, waited: performance.now() - started, listeners }
      } finally {
        stop.abort() // a wait that outlived its bound ends here, not at the next spec
      }
    })
  }

  it('a wall clock stepped an hour on does not end the wait before settleTimeout', async () => {
    const { result, waited } = await checkStepped(HOUR)
    expect(result).to.deep.include({ status: 'applied', changed: ['slow'] })
    // Timers never fire early: the margin below SETTLE is rounding only.
    expect(waited, 'ms the check waited for the entry').to.be.at.least(SETTLE - 50)
  })

  it('a wall clock stepped an hour back still ends the wait at settleTimeout', async () => {
    const { result } = await checkStepped(-HOUR)
    expect(result).to.deep.include({ status: 'applied', changed: ['slow'] })
  })

  it('a long wait holds one timer and one listener on the plugin\'s signal, not one per round', async () => {
    const { result, listeners } = await checkStepped(0, 1_000)
    expect(result).to.deep.include({ status: 'applied', changed: ['slow'] })
    // A round every 20 ms for a second: 40-50 rounds, each of which left a sleep listening on the signal before.
    expect(listeners, 'abort listeners on the plugin\'s signal during the wait').to.be.at.most(3)
  })
})
