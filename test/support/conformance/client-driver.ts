// Our MCP client under the MCP conformance suite's client mode: the suite runs `<this> <server url>`
// with the scenario in MCP_CONFORMANCE_SCENARIO. It loads @cordis-subagents/mcp for that URL in a
// cordis app, as a user's cordis.yml would, and calls every mounted tool (add_numbers gets two numbers).
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import * as mcp from '@cordis-subagents/mcp'
import { eventually } from '@cordis-subagents/test-support'

const url = process.argv.at(-1)!
const ctx = new Context()
ctx.plugin(ToolRegistry)
await ctx.start()
const errors: unknown[] = []
ctx.on('internal/error', (error) => { errors.push(error) })
ctx.plugin(mcp, { name: 'conformance', url, startupTimeout: 10_000, callTimeout: 10_000, relistInterval: 0 })
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ''
let code = 0
// The load's apply ends once it connected and mounted what the server's first tools/list named (cordis waits for it
// in lifecycle.flush()): a server with no tools is then known to have none, with no need to wait out the bound.
let loaded = false
void ctx.lifecycle.flush().then(() => { loaded = true })
try {
  await eventually(() => ctx.tools.list().length > 0 || errors.length > 0 || loaded, 'the server\'s tools are mounted', { timeout: 10_000, every: 20 })
    .catch(() => { /* a server with no tools: the handshake was the scenario */ })
  for (const spec of ctx.tools.list()) {
    const input = spec.name.endsWith('add_numbers') ? { a: 2, b: 3 } : {}
    const result = await ctx.tools.view().execute({ name: spec.name, input }, {
      signal: AbortSignal.timeout(20_000), agent: { id: 'conformance', depth: 0 }, toolCallId: `conformance-${spec.name}`,
    })
    process.stdout.write(`${scenario} ${spec.name}: ${result.isError ? 'error ' : ''}${result.content.slice(0, 200)}\n`)
  }
  if (errors.length) {
    process.stderr.write(`${errors.map(String).join('\n')}\n`)
    code = 1
  }
} finally {
  await ctx.stop()
}
process.exit(code)
