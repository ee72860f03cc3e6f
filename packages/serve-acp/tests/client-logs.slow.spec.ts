/// <reference types="mocha" />
// The bin on stdin/stdout (its logs on stderr): a client's foreign crossings and junk make bounded log lines there.
// The ACP SDK's console is routed while the stdio connection is open, as on a transport of the host's own
// (tests/client-logs.spec.ts). Before, stderr got 10,000 warnings and one raw line per junk message, 1 MiB ones whole.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { appYml, ROOT } from './helpers.js'

const BIN_SOURCE = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
const INITIALIZE = 10_000
const JUNK = 2_000
const MIB = 1 << 20

/** Reads NDJSON lines from `chunks` until `total` came. */
async function readLines(chunks: AsyncIterable<Buffer>, total: number): Promise<number> {
  let seen = 0
  for await (const chunk of chunks) {
    for (const byte of chunk) if (byte === 10) seen++
    if (seen >= total) break
  }
  return seen
}

describe('serve-acp: log lines a client can trigger, on stdio', function () {
  this.timeout(60_000)

  it(`the bin: ${INITIALIZE} initialize with a foreign crossing and ${JUNK} junk messages make a few bounded lines on stderr`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-acp-logs-'))
    const config = join(dir, 'app.yml')
    writeFileSync(config, appYml({ serve: 'loadSession: false' }))
    // No crossing variables: the client's crossing is foreign to this process.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('SUBAGENT_')))
    const flags = ['--import', 'tsx', '--conditions=cordis-subagents-source']
    const child = spawn(process.execPath, [...flags, BIN_SOURCE, config], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    let stderr = ''
    child.stderr!.on('data', (chunk) => { stderr += chunk })
    try {
      const meta = { cordisSubagents: { crossingFor: 'not-our-crossing-0123456789' } }
      const params = { protocolVersion: 1, clientCapabilities: {}, _meta: meta }
      const lines = [
        ...Array.from({ length: INITIALIZE }, (_, id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params })),
        JSON.stringify({ jsonrpc: '2.0', result: {}, ['K'.repeat(MIB)]: 1 }),
        JSON.stringify({ jsonrpc: '2.0', id: 'Q'.repeat(MIB), result: {} }),
        ...Array.from({ length: JUNK }, (_, i) => JSON.stringify({ jsonrpc: '2.0', id: 5_000_000 + i, result: {} })),
        JSON.stringify({ jsonrpc: '2.0', id: 'last', method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } }),
      ]
      child.stdin!.write(lines.join('\n') + '\n')
      expect(await readLines(child.stdout!, INITIALIZE + 1)).to.equal(INITIALIZE + 1)
      child.stdin!.end()
      expect(await exited).to.equal(0)
      const printed = stderr.split('\n')
      const crossing = printed.filter((line) => line.includes('crossing'))
      const sdk = printed.filter((line) => /unknown request|Invalid message|ACP SDK/.test(line))
      expect(crossing, stderr.slice(-2_000)).to.have.length(11)
      expect(crossing[10]).to.include(`${INITIALIZE - 10} more lines like this were not logged (log budget: 10 per 60 s)`)
      expect(sdk, stderr.slice(-2_000)).to.have.length(11)
      expect(sdk.slice(0, 10).every((line) => line.includes('ACP SDK: ')), 'every SDK line through the logger').to.equal(true)
      expect(sdk[10]).to.include(`serve-acp: ACP SDK: ${JUNK + 2 - 10} more lines like this were not logged`)
      expect(Math.max(...printed.map((line) => line.length)), 'the longest line on stderr').to.be.at.most(2_200)
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
