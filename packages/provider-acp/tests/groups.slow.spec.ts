/// <reference types="mocha" />
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { expect } from 'chai'
import { groupAlive } from '../src/containment/groups.js'

describe('provider-acp: groupAlive (the teardown liveness check)', () => {
  it('a group with no member at all is dead (answered by the signal-0 probe, ESRCH)', async () => {
    // A pid far above any pid_max is never a process group.
    expect(await groupAlive(2 ** 30)).to.equal(false)
  })

  it('a group with a running leader is alive, and dead once the leader exited and was reaped', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { detached: true, stdio: 'ignore' })
    const exited = once(child, 'exit')
    try {
      expect(await groupAlive(child.pid!)).to.equal(true)
    } finally {
      process.kill(-child.pid!, 'SIGKILL')
    }
    await exited
    expect(await groupAlive(child.pid!)).to.equal(false)
  })
})
