// The watcher's debounce and its "at least every 10 × debounce" bound are in-process time: a step of the OS wall clock
// (NTP, a VM resumed, `date -s`) neither fires a save mid-burst (forward) nor starves a steady stream (back).
// Events come from a stand-in for fs.watch, so the spec decides when each one arrives.
import { EventEmitter } from 'node:events'
import type { watch } from 'node:fs'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { withSteppedClock, within } from '@cordis-subagents/test-support'
import { type FileWatcher, watchFile } from '../src/file-watcher.js'

const HOUR = 3_600_000
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('watchFile under a wall-clock step', function () {
  this.timeout(30_000)
  let dir: string
  let file: string
  let watcher: FileWatcher | undefined
  let interval: NodeJS.Timeout | undefined
  /** The listener watchFile gave the stand-in for fs.watch: `event()` is a change of the file. */
  let listener: ((event: string, name: string) => void) | undefined
  const event = () => listener!('change', 'cordis.yml')
  const fakeWatch = ((_dir: string, _options: unknown, onEvent: (event: string, name: string) => void) => {
    listener = onEvent
    return Object.assign(new EventEmitter(), { close: () => {} })
  }) as unknown as typeof watch

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-watch-clock-'))
    file = join(dir, 'cordis.yml')
    writeFileSync(file, 'a: 1\n')
  })
  afterEach(() => {
    clearInterval(interval)
    watcher?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a wall clock stepped an hour on between two events does not cut the debounce short', async () => {
    let calls = 0
    watcher = watchFile(file, () => void calls++, { debounce: 2_000, retryDelay: 50, watch: fakeWatch })
    await withSteppedClock(async (step) => {
      event()
      step(HOUR)
      event()
      // The debounce is 2 s: any call now is early.
      await pause(200)
    })
    expect(calls, 'calls within 200 ms of the last event, debounce 2 s').to.equal(0)
  })

  it('a steady stream of events still gets a call about every second though the wall clock stepped an hour back', async () => {
    let called!: () => void
    const call = new Promise<void>((resolve) => called = resolve)
    watcher = watchFile(file, () => called(), { debounce: 50, retryDelay: 50, watch: fakeWatch })
    await withSteppedClock(async (step) => {
      event()
      step(-HOUR)
      interval = setInterval(event, 20)
      // Due about 1 s (the bound is max(10 × debounce, 1 s)) after the first event.
      await within(call, 5_000, 'a call during the stream')
    })
  })
})
