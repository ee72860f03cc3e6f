/// <reference types="mocha" />
// An agent process's teardown waits (the grace before SIGTERM, the kill grace before SIGKILL) are in-process time: a
// step of the OS wall clock (NTP, a VM resumed, `date -s`) neither cuts a grace short (forward: the group would be
// SIGTERMed at once) nor stretches it by the step (back: teardown would wait an hour for a lingering group member).
// The agent is a shell whose leader exits when stdin closes and leaves a `sleep` behind in its process group.
import { expect } from 'chai'
import { withSteppedClock, within } from '@cordis-subagents/test-support'
import { unregisterGroup } from '../src/containment/groups.js'
import { AgentProcess } from '../src/process.js'

const HOUR = 3_600_000

describe('provider-acp: agent process teardown under a wall-clock step', function () {
  this.timeout(20_000)
  const agents: AgentProcess[] = []

  afterEach(async () => {
    for (const agent of agents.splice(0)) {
      if (agent.pid === undefined) continue
      try {
        process.kill(-agent.pid, 'SIGKILL')
      } catch {
        // the group is gone
      }
      await agent.terminate({ grace: 0, killGrace: 1000 })
      unregisterGroup(agent.pid)
    }
  })

  /** Starts the agent with a `sleep <seconds>` left in its group, and resolves once that sleep runs. */
  async function start(seconds: number): Promise<AgentProcess> {
    const agent = new AgentProcess({
      command: '/bin/sh', args: ['-c', `sleep ${seconds} & echo ready; exec cat >/dev/null`], cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ACP_FIXTURE_OWNER: String(process.pid) }, containment: 'process-group',
    })
    agents.push(agent)
    await within(new Promise<void>((resolve) => agent.stdout.on('data', (chunk: Buffer) => chunk.includes('ready') && resolve())), 10_000, 'the agent')
    return agent
  }

  /** The signals (not probes) `run` sends to `agent`'s process group. */
  async function groupSignals(agent: AgentProcess, run: () => Promise<void>): Promise<unknown[]> {
    const sent: unknown[] = []
    const kill = process.kill
    process.kill = ((pid: number, signal?: string | number) => {
      if (pid === -agent.pid! && signal !== 0) sent.push(signal)
      return kill.call(process, pid, signal)
    }) as typeof process.kill
    try {
      await run()
    } finally {
      process.kill = kill
    }
    return sent
  }

  it('a wall clock stepped an hour on does not cut the grace short: a member that ends by itself gets no SIGTERM', async () => {
    const agent = await start(0.5)
    const signals = await groupSignals(agent, () => withSteppedClock(async (step) => {
      // terminate() takes its grace's bound before it first waits: the step comes after.
      const done = agent.terminate({ grace: 10_000, killGrace: 1000 })
      step(HOUR)
      await within(done, 15_000, 'terminate')
    }))
    expect(signals, 'signals sent to the group').to.deep.equal([])
  })

  it('a wall clock stepped an hour back still ends the grace on time: a lingering member is SIGTERMed', async () => {
    const agent = await start(60)
    const signals = await groupSignals(agent, () => withSteppedClock(async (step) => {
      const done = agent.terminate({ grace: 200, killGrace: 1000 })
      step(-HOUR)
      await within(done, 5_000, 'terminate with a grace of 200 ms')
    }))
    expect(signals, 'signals sent to the group').to.deep.equal(['SIGTERM'])
  })
})
