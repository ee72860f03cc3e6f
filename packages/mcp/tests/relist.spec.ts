/// <reference types="mocha" />
// The Relister's spacing of re-lists is an in-process interval: an OS wall-clock step (NTP, a VM resumed, `date -s`)
// neither holds a `tools/list_changed` back for as long as the step went back, nor lets it in early after a forward step.
import { expect } from 'chai'
import { withSteppedClock, within } from '@cordis-subagents/test-support'
import { Relister } from '../src/relist.js'

const HOUR = 3_600_000

/** A Relister whose listings are counted, with a wait for the n-th one. */
function counted(interval: number) {
  const starts: number[] = []
  const waiters: Array<() => void> = []
  const relister = new Relister(async () => {
    starts.push(performance.now())
    for (const wake of waiters.splice(0)) wake()
  }, interval)
  const listing = (n: number) => new Promise<void>((resolve) => {
    const check = () => (starts.length >= n ? resolve() : void waiters.push(check))
    check()
  })
  return { relister, starts, listing }
}

describe('@cordis-subagents/mcp: re-list spacing under a wall-clock step', () => {
  it('a list_changed after the interval is applied although the wall clock stepped back an hour', async () => {
    const { relister, listing } = counted(50)
    try {
      await withSteppedClock(async (step) => {
        await relister.first()
        step(-HOUR)
        await new Promise((resolve) => setTimeout(resolve, 80))
        relister.changed()
        await within(listing(2), 5_000, 'the re-list after the step back')
      })
    } finally {
      relister.close()
    }
  })

  it('a list_changed right after a listing still waits the interval although the wall clock stepped an hour on', async () => {
    const { relister, starts, listing } = counted(300)
    try {
      await withSteppedClock(async (step) => {
        await relister.first()
        const ended = performance.now()
        step(HOUR)
        relister.changed()
        await within(listing(2), 5_000, 'the re-list after the step forward')
        // A timer never fires early: 250 leaves room for rounding only.
        expect(starts[1]! - ended, 'ms between the first listing and the second').to.be.at.least(250)
      })
    } finally {
      relister.close()
    }
  })
})
