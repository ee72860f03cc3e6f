// The real ACP adapters (Codex's codex-acp, Claude Code's claude-agent-acp) as children of a
// cordis.yml app: a scripted parent delegates through subagent_acp, the adapter runs its own agent
// loop against a loopback fake model (test/support/fake-*-api.ts), and the answer comes back.
import { expect } from 'chai'
import type { AdapterName } from './support/real-agents.js'
import { useRealAgent } from './support/real-agent-hooks.js'
import { reaped } from './support/processes-by-env.js'

const ADAPTERS: AdapterName[] = ['codex', 'claude']

for (const name of ADAPTERS) {
  describe(`real ${name} ACP adapter as a subagent (loopback model, through the loader)`, function () {
    this.timeout(120_000)
    const real = useRealAgent()

    it('the parent gets exactly the child\'s final text, and the adapter\'s processes are reaped after ctx.stop()', async () => {
      const answer = `${name} child: the answer is 42 (from the loopback model)`
      const agent = await real.agent(name, (request) => ({ text: request.tools.length ? answer : 'side request' }))
      const host = await real.app()
      const result = await host.delegate('What is the answer? Reply with one line.')
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(result.text).to.equal(answer)
      // The adapter really ran its loop against the fake: the prompt reached the model, with the adapter's own tools.
      const main = agent.model.requests.filter((request) => request.tools.length)
      expect(main, 'model requests with tools').to.have.length(1)
      expect(JSON.stringify(main[0]!.body)).to.include('What is the answer? Reply with one line.')
      expect(agent.model.unknown, 'endpoints the fake does not serve').to.deep.equal([])
      expect(host.seen.size, 'adapter processes seen at hand-over').to.be.greaterThan(0)
      await host.stop()
      expect(await reaped('HOME', agent.home), 'adapter processes left after ctx.stop()').to.deep.equal([])
    })
  })
}
