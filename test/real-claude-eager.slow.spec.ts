// The configuration provider-acp's README recommends for warm Claude children works with the real
// claude-agent-acp: `sessionMeta: { claudeCode: { options: { executableArgs: ['--no-lazy'] } } }`
// (the Claude Code CLI under Node's `--no-lazy`; the CLI renames its process, so its arguments cannot
// be read back here: bench:real's `ready-eager` row shows the effect). The first run and a run on the
// warm spare opened ahead both come back whole, and every process is reaped after ctx.stop().
import { expect } from 'chai'
import { eventually } from './helpers.js'
import { useRealAgent } from './support/real-agent-hooks.js'
import { reaped } from './support/processes-by-env.js'

const EAGER = 'sessionMeta: { claudeCode: { options: { executableArgs: [\'--no-lazy\'] } } }'

describe('real claude ACP adapter with sessionMeta (the CLI compiled ahead)', function () {
  this.timeout(180_000)
  const real = useRealAgent()

  it('a cold run and a run on the warm spare both come back whole', async () => {
    const answer = 'claude child, compiled ahead: the answer is 42'
    const agent = await real.agent('claude', (request) => ({ text: request.tools.length ? answer : 'side request' }))
    const host = await real.app({ provider: ['warm: true', 'spares: 1', EAGER] })
    const first = await host.delegate('What is the answer? Reply with one line.')
    expect(first.stopReason, first.diagnostic).to.equal('completed')
    expect(first.text).to.equal(answer)
    const pool = (host.app.ctx.subagents.get('acp') as { pool?: { counts(): { idle: number; starting: number }; idlePids(): number[] } }).pool!
    let spare: number | undefined
    const ready = await eventually(() => {
      const counts = pool.counts()
      spare = pool.idlePids()[0]
      return counts.idle === 1 && counts.starting === 0 && spare !== undefined
    }, 120_000)
    expect(ready, 'a spare with its session opened ahead').to.equal(true)
    const second = await host.delegate('What is the answer? Reply with one line.')
    expect(second.stopReason, second.diagnostic).to.equal('completed')
    expect(second.text).to.equal(answer)
    expect(host.seen.has(spare!), 'the second delegation ran on the spare').to.equal(true)
    expect(agent.model.unknown, 'endpoints the fake does not serve').to.deep.equal([])
    await host.stop()
    expect(await reaped('HOME', agent.home), 'adapter processes left after ctx.stop()').to.deep.equal([])
  })
})
