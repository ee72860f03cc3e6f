/// <reference types="mocha" />
// Issue 26, item 11: a hostile agent that moves its grandchild out of the run's cgroup (into the
// host's, which root may write) and out of its process group. With runAs (host root) it cannot;
// without, a grandchild that is still its descendant is found and killed at teardown anyway, and
// only a double-forked one escapes (the README's "Containment: what can escape").
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { type AcpProvider, cgroupBase } from '../src/index.js'
import { assertNoLeftovers, HOSTILE, hostileProvider, isAlive, rejection, request, until } from './helpers.js'

interface Report {
  pid: number
  uid: number
  /** 'escaped', 'refused EACCES', 'no cgroup v2', 'in the root cgroup' */
  result: string
  before: string | null
  after: string | null
}

const isRoot = process.getuid?.() === 0

describe('provider-acp: containment against an agent that leaves its cgroup (runAs, strays)', function () {
  this.timeout(30_000)
  let dir: string
  const providers: AcpProvider[] = []
  const survivors: number[] = []

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'acp-escape-'))
    // An agent running as another user writes its report here.
    chmodSync(dir, 0o777)
  })

  afterEach(async () => {
    for (const pid of survivors.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone
      }
      await until(() => !isAlive(pid), `the escaped process ${pid} to die`)
    }
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    assertNoLeftovers()
    rmSync(dir, { recursive: true, force: true })
  })

  async function escape(variant: 'child' | 'double', options: Record<string, unknown> = {}): Promise<Report> {
    const acp = hostileProvider('cgroup-escape', variant, { args: [HOSTILE, 'cgroup-escape', variant, dir], ...options })
    providers.push(acp)
    const run = await acp.start(request({ runId: `escape-${variant}` })) as AcpRun
    const result = await run.result
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    const report = JSON.parse(result.output) as Report
    expect(report.pid, result.output).to.be.a('number')
    await run.dispose()
    await acp.reaped()
    return report
  }

  it('without runAs, a setsid grandchild that moved itself into the host\'s cgroup is still found (a descendant) and killed', async () => {
    const report = await escape('child')
    if (isRoot && cgroupBase()) {
      // Root may write any cgroup.procs: the move succeeds, as the README says.
      expect(report.result).to.equal('escaped')
      expect(report.after).to.not.equal(report.before)
    }
    expect(isAlive(report.pid), `grandchild ${report.pid} (${report.result}) after dispose`).to.equal(false)
  })

  it('without runAs, a double-forked grandchild that left the group (and the cgroup, where it may) survives teardown, as documented', async () => {
    const report = await escape('double')
    survivors.push(report.pid)
    // As root (or in a delegated subtree) it moved into the parent cgroup; without a cgroup it was only ever in the group it left.
    if (cgroupBase()) expect(report.result).to.equal('escaped')
    expect(isAlive(report.pid), `grandchild ${report.pid} (${report.result})`).to.equal(true)
  })

  if (isRoot) {
    it('runAs (host root): the agent runs as that user, cannot leave its cgroup, and nothing survives stop, double fork included', async () => {
      const report = await escape('double', { runAs: 'nobody' })
      expect(report.uid).to.not.equal(0)
      if (cgroupBase()) {
        expect(report.result).to.match(/^refused E(ACCES|PERM)$/)
        expect(report.before).to.match(/\/cordis-acp-\d+-\d+$/)
        expect(report.after).to.equal(report.before)
        expect(isAlive(report.pid), `grandchild ${report.pid} after dispose`).to.equal(false)
      } else {
        // No writable cgroup v2: runAs still drops root, but a double fork leaves the process group (README).
        survivors.push(report.pid)
        expect(isAlive(report.pid)).to.equal(true)
      }
    })
  } else {
    it('runAs on a host that is not root is refused at load (switching users needs root), as documented', () => {
      expect(() => hostileProvider('cgroup-escape', 'double', { runAs: 'nobody' })).to.throw(/config\.runAs .* needs the host to run as root/)
    })
  }

  it('runAs refuses root, unknown users and malformed values at load with ACP_INVALID_CONFIG', async () => {
    for (const [runAs, message] of [
      ['root', /unprivileged user, not root/],
      ['0:0', /unprivileged user, not root/],
      ['no-such-user-acp-test', /does not know/],
      ['a b', /must be a user name, a uid, or uid:gid/],
      ['x:y', /must be a user name, a uid, or uid:gid/],
    ] as Array<[string, RegExp]>) {
      const error = await rejection((async () => hostileProvider('cgroup-escape', 'double', { runAs }))())
      expect(error.code, runAs).to.equal('ACP_INVALID_CONFIG')
      expect(error.message, runAs).to.match(message)
    }
  })
})
