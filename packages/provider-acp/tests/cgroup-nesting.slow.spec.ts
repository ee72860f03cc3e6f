/// <reference types="mocha" />
// A served middle host that runs its own ACP agent makes its runs' cgroups inside the root's run
// cgroup. When the middle ends before removing its nested cgroup (SIGKILLed, or its rmdir racing its
// dying child), the root must still remove its run's cgroup (the nested one with it), unregister the
// process group, and a later host's sweep must remove such a tree left behind. Real cgroups, as in
// containment.slow.spec.ts: where the host may create none, the documented fallback is checked.
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import {
  cgroupBase, createRunCgroup, deferredCgroups, MAX_TREE_DEPTH, removeCgroup, retryDeferredCgroups,
} from '../src/containment/cgroup.js'
import { liveProcessGroups, unregisterGroup } from '../src/containment/groups.js'
import { AgentProcess } from '../src/process.js'
import { until } from './helpers.js'

/** The agent: makes a nested cgroup in its own run cgroup (as a served middle does) and starts a member in it. */
const MIDDLE = `
const fs = require('node:fs'), path = require('node:path'), cp = require('node:child_process')
const own = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\\n').find((line) => line.startsWith('0::')).slice(3).trim()
const nested = path.join(process.argv[1], path.basename(own), 'cordis-acp-' + process.pid + '-1')
fs.mkdirSync(nested)
cp.spawn('/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs"; exec sleep 60', nested], { stdio: 'ignore' })
setInterval(() => {}, 60000)
`
/** No process ever has this pid (above the largest pid_max), so its cgroups are stale. */
const DEAD_PID = 2 ** 22 + 1

function members(path: string): number[] {
  try {
    return readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** Removes what the old code left behind (bottom-up), so one failure does not leak into other specs. */
function cleanTree(path: string, below: string[]) {
  for (const dir of [...below].reverse().concat(path)) {
    try {
      rmdirSync(dir)
    } catch {
      // gone, or still busy
    }
  }
}

describe('provider-acp: a run cgroup with a nested cgroup left in it (a served middle\'s)', function () {
  this.timeout(20_000)
  const base = cgroupBase()
  const cleanups: (() => void)[] = []

  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup()
  })

  function start(): AgentProcess {
    const agent = new AgentProcess({ command: process.execPath, args: ['-e', MIDDLE, base ?? ''], cwd: process.cwd(), env: { PATH: process.env.PATH ?? '' } })
    cleanups.push(() => {
      if (agent.pid !== undefined) unregisterGroup(agent.pid)
    })
    return agent
  }

  if (!base) {
    it('(no writable cgroup v2 here) no run cgroup is made: the process group is the containment, as documented', () => {
      expect(createRunCgroup()).to.equal(null)
    })
    return
  }

  it('ending the run removes its cgroup and the nested one, and unregisters the group', async () => {
    const agent = start()
    const cgroup = agent.cgroup!
    expect(cgroup, 'a run cgroup').to.be.a('string')
    const nested = join(cgroup, `cordis-acp-${agent.pid}-1`)
    cleanups.push(() => cleanTree(cgroup, [nested]))
    await until(() => members(nested).length === 1, 'the nested cgroup to get its member')
    expect(liveProcessGroups()).to.include(agent.pid)

    await agent.terminate({ grace: 0, killGrace: 1000 })
    expect(existsSync(nested), 'the nested cgroup').to.equal(false)
    expect(existsSync(cgroup), 'the run cgroup').to.equal(false)
    expect(liveProcessGroups()).to.not.include(agent.pid)
    expect(deferredCgroups()).to.deep.equal([])
  })

  it('a nested tree deeper than the bound: the group is still unregistered, the cgroup kept and removed once it can be', async () => {
    const agent = start()
    const cgroup = agent.cgroup!
    const chain: string[] = []
    for (let depth = 0, dir = cgroup; depth <= MAX_TREE_DEPTH; depth++) chain.push(dir = join(dir, `n${depth}`))
    cleanups.push(() => cleanTree(cgroup, chain))
    for (const dir of chain) mkdirSync(dir)

    await agent.terminate({ grace: 0, killGrace: 1000 })
    expect(liveProcessGroups()).to.not.include(agent.pid)
    expect(existsSync(cgroup), 'the run cgroup (too deep to remove)').to.equal(true)
    expect(deferredCgroups()).to.deep.equal([cgroup])
    rmdirSync(chain.at(-1)!)
    retryDeferredCgroups()
    expect(existsSync(cgroup), 'the run cgroup, retried').to.equal(false)
    expect(deferredCgroups()).to.deep.equal([])
  })

  it('a later host\'s sweep removes a stale run cgroup with the nested cgroups in it', () => {
    const stale = join(base, `cordis-acp-${DEAD_PID}-1`)
    const below = [join(stale, `cordis-acp-${DEAD_PID + 1}-1`), join(stale, `cordis-acp-${DEAD_PID + 1}-1`, `cordis-acp-${DEAD_PID + 2}-3`)]
    cleanups.push(() => cleanTree(stale, below))
    mkdirSync(stale)
    for (const dir of below) mkdirSync(dir)

    const fresh = createRunCgroup()
    expect(fresh, 'a run cgroup').to.be.a('string')
    cleanups.push(() => removeCgroup(fresh!))
    expect(existsSync(stale), 'the stale tree').to.equal(false)
  })
})
