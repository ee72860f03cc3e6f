/// <reference types="mocha" />
// The bin's wait for its config's entries to apply (cordisApp's start, bounded by the startup timeout) is measured on
// the monotonic clock: a step of the wall clock while it waits neither ends it early nor stretches it. In process:
// a loader app whose one entry never loads (its module's import never finishes), the step taken from within the wait.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { eventually, withSteppedClock } from '@cordis-subagents/test-support'
import { cordisApp } from '../src/cordis-app.js'
import type { HostApp } from '../src/host-app.js'

const NEVER_LOADS = fileURLToPath(new URL('./fixtures/never-loads.mjs', import.meta.url))

describe('serve-acp: the startup wait across wall-clock steps', () => {
  let dir: string
  let app: HostApp | undefined

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'serve-acp-startup-clock-'))
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, `- id: stuck\n  name: ${JSON.stringify(NEVER_LOADS)}\n`)
    app = await cordisApp(file)
  })

  afterEach(async () => {
    await app?.stop()
    app = undefined
    rmSync(dir, { recursive: true, force: true })
  })

  /** Starts the app with `timeout`; the wall clock steps `by` the first time the wait looks at the entries. Settles after the step. */
  async function start(step: (ms: number) => void, by: number, timeout: number): Promise<() => boolean> {
    let stepped = false
    let done = false
    void app!.start(() => {
      if (!stepped) step(by)
      stepped = true
      return 0
    }, timeout).finally(() => { done = true })
    await eventually(() => stepped, 'the wait looks at the entries')
    return () => done
  }

  it('the wall clock stepping forward 1 h does not end the wait early', async () => {
    await withSteppedClock(async (step) => {
      const done = await start(step, 3_600_000, 1_500)
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(done(), 'the wait ended long before its 1.5 s bound').to.equal(false)
      await eventually(done, 'the wait ends at its bound')
    })
  })

  it('the wall clock stepping back 1 h does not stretch the wait past its bound', async () => {
    await withSteppedClock(async (step) => {
      const done = await start(step, -3_600_000, 200)
      await eventually(done, 'the wait ends at its bound')
    })
  })
})
