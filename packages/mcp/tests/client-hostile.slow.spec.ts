/// <reference types="mocha" />
// Issue 39 against real MCP server subprocesses: regexes with catastrophic backtracking in a
// server's schemas (item 3), and a storm of tools/list_changed notifications (item 6).
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { type Context, Logger } from 'cordis'
import { client, eventually, makeExec, setup } from './helpers.js'

const LIST_STORM = fileURLToPath(new URL('./fixtures/list-storm.mjs', import.meta.url))
const REGEX_BOMB = fileURLToPath(new URL('./fixtures/regex-bomb.mjs', import.meta.url))
/** `^(a+)+$` against this many a's and a `!` blocks a backtracking engine for seconds (the issue: 24 → 1 s, 26 → 9 s). */
const AS = 27
const EVIL = `${'a'.repeat(AS)}!`

/** The longest gap between ticks of a 10 ms timer until `stop()`: how long the event loop was blocked at most. */
function loopProbe(): { stop(): number } {
  let last = performance.now()
  let longest = 0
  const timer = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 10)
  return {
    stop() {
      clearInterval(timer)
      return Math.max(longest, performance.now() - last)
    },
  }
}

describe('@cordis-subagents/mcp: hostile servers (issue 39)', function () {
  this.timeout(60_000)
  let ctx: Context

  const call = async (name: string, input: unknown = {}) => {
    const result = await ctx.tools.view().execute({ name, input }, makeExec())
    if (result.isError) throw new Error(`${name} failed: ${result.content}`)
    return JSON.parse(result.content) as Record<string, unknown>
  }
  const listed = () => ctx.tools.list().map((tool) => /^storm__listed_(\d+)$/.exec(tool.name)).filter((m) => m !== null).map((m) => Number(m[1]))

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('item 3: a server\'s backtracking regex (input pattern, patternProperties, output schema) runs in linear time on the host', async () => {
    const logged: string[] = []
    const target = { colors: 0, showTime: '', print: (text: string) => void logged.push(text), levels: { base: 2 } } as unknown as Logger.Target
    Logger.targets.push(target)
    try {
      ctx.plugin(client, { name: 'bomb', command: process.execPath, args: [REGEX_BOMB, String(AS)] })
      await eventually('the tools mounted', () => ctx.tools.has('bomb__lookahead'))
      const run = (name: string, input: unknown) => ctx.tools.view().execute({ name, input }, makeExec())
      const probe = loopProbe()
      const evilText = await run('bomb__pattern', { text: EVIL })
      const evilKey = await run('bomb__keys', { [EVIL]: 'x' })
      const evilOutput = await run('bomb__output', {})
      const blocked = probe.stop()
      // A backtracking engine blocks the loop for seconds on each of the three; RE2 and compiling the schemas take milliseconds.
      expect(blocked).to.be.below(2_000)
      expect(evilText.isError).to.equal(true)
      expect(evilText.content).to.include('Invalid input for tool "bomb__pattern"').and.include('must match pattern "^(a+)+$"')
      expect(evilKey.isError).to.equal(true)
      expect(evilKey.content).to.include('Invalid input for tool "bomb__keys"').and.include('must NOT have additional properties')
      expect(evilOutput.isError).to.equal(true)
      expect(evilOutput.content).to.include('MCP_CALL_FAILED').and.include('does not match the tool\'s output schema')
      expect(await run('bomb__pattern', { text: 'aaaa' })).to.deep.equal({ content: 'ran pattern' })
      expect(await run('bomb__keys', { aaaa: 'x' })).to.deep.equal({ content: 'ran keys' })
      // RE2 cannot run a lookahead: that pattern is skipped with a warning, and the server decides.
      expect(await run('bomb__lookahead', { text: 'no digits' })).to.deep.equal({ content: 'ran lookahead' })
      expect(logged.join('\n')).to.match(/bomb: tool bomb__lookahead: pattern .*RE2 cannot run it.*not checked on the host/)
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
  })

  it('item 6: bursts of 1,000 tools/list_changed notifications cost one re-list each, never one per notification', async () => {
    ctx.plugin(client, { name: 'storm', command: process.execPath, args: [LIST_STORM] })
    await eventually('the first listing mounted', () => ctx.tools.has('storm__listed_1'))
    // The server holds each tools/list answer from the first burst on, until release.
    expect(await call('storm__storm', { count: 1000 })).to.deep.equal({ sent: 1000 })
    await eventually('one re-list reached the server', async () => (await call('storm__stats')).lists === 2)
    // A second burst while that re-list is in flight: one more re-list pending, not a thousand.
    expect(await call('storm__storm', { count: 1000 })).to.deep.equal({ sent: 1000 })
    await call('storm__release')
    await eventually('the re-list after the second burst mounted', () => listed().some((n) => n >= 3))
    expect(listed()).to.deep.equal([3])
    // A re-list queued behind the last one would have reached the server before this call.
    expect(await call('storm__stats')).to.deep.equal({ lists: 3 })
  })
})
