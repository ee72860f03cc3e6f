/// <reference types="mocha" />
// Issue 39 against real MCP server subprocesses: a storm of tools/list_changed notifications
// (item 6).
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { client, eventually, makeExec, setup } from './helpers.js'

const LIST_STORM = fileURLToPath(new URL('./fixtures/list-storm.mjs', import.meta.url))

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
