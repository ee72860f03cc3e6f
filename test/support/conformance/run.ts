// Runs the MCP conformance suite (@modelcontextprotocol/conformance, its own CLI as a subprocess) against
// our MCP client and our served MCP server, and reads each scenario's checks.json into one row.
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { APPLIES, notApplicable, type Side, TIMING_CHECKS } from './scenarios.js'
import { startServed } from './served.js'

const require = createRequire(import.meta.url)
const CLI = join(dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js')
const NODE20 = fileURLToPath(new URL('./node20.mjs', import.meta.url))
const DRIVER = fileURLToPath(new URL('./client-driver.ts', import.meta.url))

interface Check { id: string; status: string; errorMessage?: string }
export interface Row {
  side: Side
  scenario: string
  /** `passes`, `fails`, or `not applicable` (with `why`). */
  outcome: 'passes' | 'fails' | 'not applicable'
  why?: string
  /** What the suite saw: `3/3 checks` (timing checks counted apart); `not run` for a client scenario that does not apply. */
  checks: string
  failures: string[]
}

function cli(args: string[], timeout: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', NODE20, CLI, ...args], { timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) || 1 : 0, output: `${stdout}${stderr}` })
    })
  })
}

/** Every scenario the installed suite lists for one side (its `list` command). */
async function listed(side: Side): Promise<string[]> {
  const { output } = await cli(['list'], 60_000)
  const section = output.split(/\n(?=Client scenarios)/)[side === 'server' ? 0 : 1] ?? ''
  return [...section.matchAll(/^\s+- (\S+) \[/gm)].map((m) => m[1])
}

function readChecks(dir: string, prefix: string): Check[] | undefined {
  const found = readdirSync(dir).filter((name) => name.startsWith(prefix)).sort().at(-1)
  return found === undefined ? undefined : JSON.parse(readFileSync(join(dir, found, 'checks.json'), 'utf8')) as Check[]
}

function row(side: Side, scenario: string, checks: Check[] | undefined): Row {
  const why = notApplicable(side, scenario)
  const counted = (checks ?? []).filter((c) => c.status === 'SUCCESS' || c.status === 'FAILURE')
  const failures = counted.filter((c) => c.status === 'FAILURE' && !TIMING_CHECKS.has(c.id)).map((c) => `${c.id}: ${c.errorMessage ?? 'failed'}`)
  const graded = counted.filter((c) => !TIMING_CHECKS.has(c.id))
  const timing = counted.length - graded.length
  const seen = checks === undefined ? 'not run' : `${graded.length - failures.length}/${graded.length} checks${timing ? ` (+${timing} timing check, not graded)` : ''}`
  if (why) return { side, scenario, outcome: 'not applicable', why, checks: seen, failures }
  return { side, scenario, outcome: checks !== undefined && graded.length > 0 && failures.length === 0 ? 'passes' : 'fails', checks: seen, failures }
}

/** The server side: our served server behind its token proxy, every scenario the suite lists, in one CLI run. */
export async function runServer(): Promise<Row[]> {
  const scenarios = await listed('server')
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-server-'))
  const served = await startServed()
  try {
    await cli(['server', '--url', served.url, '--suite', 'all', '-o', out], 300_000)
    return scenarios.map((scenario) => row('server', scenario, readChecks(out, `server-${scenario}-`)))
  } finally {
    await served.close()
    rmSync(out, { recursive: true, force: true })
  }
}

/** The client side: our client (client-driver.ts) under each applicable scenario; the others are listed, not run. */
export async function runClient(): Promise<Row[]> {
  const scenarios = await listed('client')
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-client-'))
  const command = [process.execPath, '--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module', DRIVER]
    .map((part) => JSON.stringify(part)).join(' ')
  try {
    const rows: Row[] = []
    for (const scenario of scenarios) {
      if (notApplicable('client', scenario) || !APPLIES.client.includes(scenario)) {
        rows.push(row('client', scenario, undefined))
        continue
      }
      await cli(['client', '--command', command, '--scenario', scenario, '--timeout', '60000', '-o', out], 120_000)
      rows.push(row('client', scenario, readChecks(out, `${scenario.replaceAll('/', '-')}-`)))
    }
    return rows
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

/** The README table of `rows`: scenario, outcome, what the suite saw, why a scenario does not apply. */
export function table(rows: readonly Row[], version: string): string {
  const lines = [
    `Generated by \`npm run conformance:table\` from \`@modelcontextprotocol/conformance\` ${version} (\`test/mcp-conformance.slow.spec.ts\` fails when it is stale).`,
    '',
    '| scenario | result | checks | why it does not apply |',
    '|---|---|---|---|',
  ]
  for (const r of rows) lines.push(`| \`${r.scenario}\` | ${r.outcome} | ${r.checks} | ${r.why ?? ''} |`)
  return lines.join('\n')
}

export function suiteVersion(): string {
  return (JSON.parse(readFileSync(require.resolve('@modelcontextprotocol/conformance/package.json'), 'utf8')) as { version: string }).version
}

/** The README that holds each side's table, between `<!-- conformance:start -->` and `<!-- conformance:end -->`. */
export const README: Record<Side, string> = {
  client: fileURLToPath(new URL('../../../packages/mcp/README.md', import.meta.url)),
  server: fileURLToPath(new URL('../../../packages/serve-mcp/README.md', import.meta.url)),
}
const START = '<!-- conformance:start -->'
const END = '<!-- conformance:end -->'

/** The table now between the markers of `file`. */
export function readmeTable(file: string): string {
  const text = readFileSync(file, 'utf8')
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  if (start < 0 || end < start) throw new Error(`${file} has no ${START} … ${END} section`)
  return text.slice(start + START.length, end).trim()
}

/** `text` of `file` with the section between the markers replaced by `body`. */
export function withTable(text: string, body: string): string {
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  return `${text.slice(0, start + START.length)}\n${body}\n${text.slice(end)}`
}
