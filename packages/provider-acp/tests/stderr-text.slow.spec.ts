/// <reference types="mocha" />
// An agent's stderr is read in chunks as the pipe delivers them: a character the child wrote in two pieces used to be
// decoded one chunk at a time and logged as two U+FFFD ("caf\uFFFD\uFFFD"), a line over the log's 2,000 characters was
// cut inside an emoji (half of it logged), and the kept stderr tail (for diagnostics) could start inside a character.
// A real child writes its stderr in separate writes, apart in time, so they arrive as separate chunks.
import { expect } from 'chai'
import { unregisterGroup } from '../src/containment/groups.js'
import { AgentProcess } from '../src/process.js'

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

// "café 漢 😀 end\n" in three writes, split inside é and inside 漢; a 2,001-unit line whose 2,000th unit is half an
// emoji; then a last line without a newline, the kept tail (16 bytes) starting inside one of its characters.
const CHILD = `
const b = Buffer.from('caf\\u00e9 \\u6f22 \\u{1F600} end\\n')
const writes = [b.subarray(0, 4), b.subarray(4, 8), b.subarray(8), 'x'.repeat(1999) + '\\u{1F600}\\n', 'x' + '\\u6f22'.repeat(10)]
const next = () => {
  const chunk = writes.shift()
  if (chunk === undefined) return process.exit(1)
  process.stderr.write(chunk, () => setTimeout(next, 60))
}
next()`

describe('provider-acp: an agent\'s stderr text is decoded whole', function () {
  this.timeout(20_000)
  let agent: AgentProcess | undefined

  afterEach(async () => {
    if (agent?.pid === undefined) return
    await agent.terminate({ grace: 0, killGrace: 1000 })
    unregisterGroup(agent.pid)
    agent = undefined
  })

  it('a character split across chunks is logged whole; long lines and the kept tail never show half a character', async () => {
    const lines: string[] = []
    agent = new AgentProcess({
      command: process.execPath, args: ['-e', CHILD], cwd: process.cwd(), stderrLimit: 16, containment: 'process-group',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ACP_FIXTURE_OWNER: String(process.pid) },
      onStderrLine: (line) => lines.push(line), wantStderrLines: () => true,
    })
    await agent.settledExit
    expect(lines).to.have.length(3)
    expect(lines[0]).to.equal('caf\u00e9 \u6f22 \u{1F600} end')
    expect(lines[1]).to.equal('x'.repeat(1999) + '…')
    expect(lines[2]).to.equal('x' + '\u6f22'.repeat(10))
    for (const line of lines) expect(LONE.test(line) || line.includes('\uFFFD'), JSON.stringify(line.slice(-8))).to.equal(false)
    expect(agent.stderrTail()).to.equal('\u6f22'.repeat(5))
  })
})
