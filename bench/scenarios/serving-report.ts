import { fmtStats } from '../lib.js'
import { pairedFigure, ratioTarget, type Target } from '../targets.js'
import type { Protocol, ServingResult } from './serving.js'
import type { ServingSystem } from './serving-server.js'

// Section 12 of `npm run bench` (bench/single.ts) and of bench/profile/serving.ts (the section alone): its text,
// table, A/A rows and targets from `serving`'s results.

const NAMES: Record<Protocol, string> = { mcp: 'the served MCP server', a2a: 'serve-a2a' }

/** The section's markdown lines (title included) and its four targets. */
export function servingLines(r: ServingResult): { lines: string[]; targets: Target[] } {
  const lines = [
    '## 12. Serving: serve-mcp and serve-a2a vs a bare SDK server running the same agents',
    '',
    `Each server in a process of its own (bench/scenarios/serving-server.ts); the SDKs' own clients run in the bench process, ${r.inFlight} calls in flight. `
    + 'MCP: a `tools/call` of `subagent` (a child agent\'s one step) in one session; the bare server is the MCP SDK\'s `Server` and Streamable HTTP '
    + 'transport on node:http with one root agent per session, the body parsed before the transport as the SDK\'s examples do. A2A: a blocking '
    + 'SendMessage whose agent delegates once (three model calls); the bare server is the A2A SDK\'s `DefaultRequestHandler`, express handlers and '
    + 'in-memory task store, one agent per task, `ctx.agents` resolved once (not through cordis\' tracing proxy per task). Ours keeps its defaults '
    + '(credential, Host/Origin checks, caps) except the rate limits and calls in flight, raised past what the bench sends. A twin, a second bare '
    + 'server of each protocol in a process of its own, gives the A/A row: what two identical servers differ by in this run. CPU is the server '
    + 'process\' own (user + system) per call; throughput is wall, client to answer. '
    + `${r.rounds} rounds × ${r.batch} calls per system, each round in ${r.slices} slices the systems take turns at (per protocol ours, bare, twin, `
    + 'the whole order reversed every slice, so each bare slice is next to both it is paired with): a pair\'s two samples share the same seconds of the '
    + 'machine\'s load. Ratios are paired per round.',
    '',
    '| system | server CPU µs per call: median (min–max) | calls per second: median (min–max) |',
    '|---|---|---|',
    ...(Object.keys(r.cpuUs) as ServingSystem[]).map((system) => `| ${system} | ${fmtStats(r.cpuUs[system])} | ${fmtStats(r.perSecond[system])} |`),
    '',
  ]
  const targets: Target[] = []
  for (const protocol of ['mcp', 'a2a'] as const) {
    const { cpuUs, perSecond } = r.samples
    const [ours, bare, twin] = [`${protocol}-ours`, `${protocol}-bare`, `${protocol}-twin`] as const
    lines.push(`${NAMES[protocol]} ÷ bare, paired per round: CPU ${fmtStats(r.cpuRatio[protocol], '×', 2)}, throughput ${fmtStats(r.throughputRatio[protocol], '×', 2)}.`)
    lines.push('')
    lines.push(`A/A, ${protocol} twin ÷ bare (two identical bare servers, paired per round): CPU ${pairedFigure(cpuUs[twin], cpuUs[bare], 'µs')}; `
      + `throughput ${pairedFigure(perSecond[twin], perSecond[bare], 'calls/s')}: the finest ratio this run resolves.`)
    lines.push('')
    targets.push(ratioTarget(`${NAMES[protocol]}: CPU per call ≤ 1.2× a bare SDK server`, cpuUs[ours], cpuUs[bare], { atMost: 1.2 }, { clock: 'CPU', unit: 'µs' }))
    targets.push(ratioTarget(`${NAMES[protocol]}: throughput ≥ 1 / 1.2 of a bare SDK server`, perSecond[ours], perSecond[bare],
      { atLeast: 1 / 1.2 }, { clock: 'wall', unit: 'calls/s' }))
  }
  return { lines, targets }
}
