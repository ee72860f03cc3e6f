// `npm run conformance:table`: runs the MCP conformance suite against our MCP client and our served MCP
// server (test/support/conformance) and rewrites the scenario tables in packages/mcp/README.md and
// packages/serve-mcp/README.md between their conformance markers.
import { readFileSync, writeFileSync } from 'node:fs'
import { README, runClient, runServer, suiteVersion, table, withTable } from '../test/support/conformance/run.js'

const version = suiteVersion()
for (const [side, rows] of [['server', await runServer()], ['client', await runClient()]] as const) {
  const file = README[side]
  writeFileSync(file, withTable(readFileSync(file, 'utf8'), table(rows, version)))
  const failing = rows.filter((r) => r.outcome === 'fails')
  process.stdout.write(`${side}: ${rows.filter((r) => r.outcome === 'passes').length} pass, ${failing.length} fail, ${rows.filter((r) => r.outcome === 'not applicable').length} not applicable -> ${file}\n`)
  for (const r of failing) process.stdout.write(`  ${r.scenario}: ${r.failures.join('; ') || r.checks}\n`)
}
