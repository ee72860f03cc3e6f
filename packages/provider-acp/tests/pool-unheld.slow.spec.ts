/// <reference types="mocha" />
// The pool's processes while no run holds them: a spare that floods stdout while it waits is stopped and
// replaced (it used to stay idle and unhealthy, counted as ready, so later runs started cold and no
// replacement came until idleTimeout), and many spares starting at once add no listener per spare to the
// pool's stop signal (MaxListenersExceededWarning at spares >= 11).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { type AcpProvider, createAcpProvider, type AcpProviderOptions } from '../src/index.js'
import { assertNoLeftovers, FAST, isAlive, logger, request, until } from './helpers.js'

const DEAF = fileURLToPath(new URL('./fixtures/deaf.mjs', import.meta.url))

describe('provider-acp: pooled processes no run holds (warm spares)', function () {
  this.timeout(90_000)
  const providers: AcpProvider[] = []
  let dir: string

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'acp-pool-unheld-'))
  })

  afterEach(async () => {
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    assertNoLeftovers()
    rmSync(dir, { recursive: true, force: true })
  })

  function provider(mode: string, arg: string | undefined, options: Partial<AcpProviderOptions>) {
    const acp = createAcpProvider({
      command: process.execPath, args: arg === undefined ? [DEAF, mode] : [DEAF, mode, arg], logger, ...FAST, ...options, env: FAST.env,
    })
    providers.push(acp)
    return acp
  }

  let counter = 0
  /** One run to its end: the kind of process it got and the fixture's pid. */
  async function answer(acp: AcpProvider): Promise<{ kind: string; pid: number }> {
    const run = await acp.start(request({ runId: `unheld-${++counter}` })) as AcpRun
    const result = await run.result
    await run.dispose()
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    return { kind: run.processKind, pid: Number(/^ok (\d+) /.exec(result.output)![1]) }
  }

  /** `idle` processes waiting, and none starting, busy or being stopped. */
  function settled(acp: AcpProvider, idle: number) {
    return until(() => {
      const counts = acp.pool!.counts()
      return counts.idle === idle && counts.starting === 0 && counts.busy === 0 && counts.stopping === 0
    }, `${idle} idle spare(s) and nothing else`, 60_000)
  }

  it('a spare that passes maxStreamBytes while it waits is stopped, counted as a failed spare and replaced; the next run is warm', async () => {
    const acp = provider('idle-flood', dir, { warm: true, spares: 1, maxStreamBytes: 64 * 1024, idleTimeout: 60_000 })
    expect((await answer(acp)).kind).to.equal('cold')
    await settled(acp, 1)
    const [spare] = acp.pool!.idlePids()
    writeFileSync(join(dir, 'flood'), '')
    await until(() => existsSync(join(dir, `flooded-by-${spare}`)), 'the spare to flood')
    await until(() => !isAlive(spare), 'the flooded spare to be stopped', 20_000)
    const { spares } = acp.pool!.status()
    expect(spares.failuresInARow).to.equal(1)
    expect(spares.lastFailure).to.match(/^while it waited for a run: The agent sent more than maxStreamBytes \(65536 bytes\)/)
    // Its replacement comes after one failure's back-off, long before idleTimeout.
    await settled(acp, 1)
    const [replacement] = acp.pool!.idlePids()
    expect(replacement).to.not.equal(spare)
    const next = await answer(acp)
    expect(next).to.deep.equal({ kind: 'warm', pid: replacement })
    expect(acp.pool!.status().spares).to.deep.include({ state: 'ready', failuresInARow: 0 })
  })

  it('16 spares (the most `spares` allows) start at once without a MaxListenersExceededWarning', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
    process.on('warning', onWarning)
    try {
      const acp = provider('plain', undefined, { warm: true, spares: 16, maxProcesses: 20 })
      expect((await answer(acp)).kind).to.equal('cold')
      await settled(acp, 16)
      // A warning is emitted on the next tick: one more turn of the loop before looking.
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.filter((warning) => /MaxListeners/.test(warning))).to.deep.equal([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})
