/// <reference types="mocha" />
// The MCP conformance suite (@modelcontextprotocol/conformance from npm, its own CLI) against our MCP
// client (@cordis-subagents/mcp, in a cordis app) and our served MCP server (@cordis-subagents/serve-mcp
// on 127.0.0.1): every scenario the suite lists is classified (test/support/conformance/scenarios.ts),
// every one that applies passes, and the tables in the two READMEs are what `npm run conformance:table`
// generates from this run.
import { expect } from 'chai'
import { APPLIES, notApplicable, type Side } from './support/conformance/scenarios.js'
import { README, readmeTable, type Row, runClient, runServer, suiteVersion, table } from './support/conformance/run.js'

describe('the MCP conformance suite against our client and our served server', function () {
  this.timeout(600_000)

  // The two sides share nothing (each its own CLI runs, output folder and, for the server side, its own served
  // app on a port of its own), so both run at once; each side's checks read its own rows.
  const runs: Partial<Record<Side, Promise<Row[]>>> = {}
  before(() => {
    runs.server = runServer()
    runs.client = runClient()
    // Each is awaited by its side's before(); this only keeps one side's failure from being unhandled meanwhile.
    for (const run of Object.values(runs)) run.catch(() => {})
  })

  for (const side of ['server', 'client'] as const) {
    describe(`the ${side} side`, () => {
      let rows: Row[]

      before(async () => {
        rows = await runs[side]!
      })

      it('every scenario the suite lists is classified: it applies, or why not is written down', () => {
        const unclassified = rows.filter((r) => !APPLIES[side as Side].includes(r.scenario) && !notApplicable(side, r.scenario))
        expect(unclassified.map((r) => r.scenario)).to.deep.equal([])
        expect(rows.filter((r) => r.outcome !== 'not applicable').map((r) => r.scenario).sort()).to.deep.equal([...APPLIES[side]].sort())
      })

      it('every scenario that applies passes', () => {
        const failing = rows.filter((r) => r.outcome === 'fails').map((r) => `${r.scenario}: ${r.failures.join('; ') || r.checks}`)
        expect(failing).to.deep.equal([])
      })

      it('the README\'s table is the one this run generates (npm run conformance:table)', () => {
        expect(readmeTable(README[side])).to.equal(table(rows, suiteVersion()))
      })
    })
  }
})
