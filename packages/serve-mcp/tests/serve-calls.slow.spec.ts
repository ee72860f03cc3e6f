/// <reference types="mocha" />
// Each MCP call is a root run of its own: 50 delegations in one session all succeed with the shipped
// defaults (a tree's default delegation cap is 16), a configured per-call budget applies to each call
// afresh, and the progress a client reads carries the child's line, not just "subagent".
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { connect, delegatingApp } from './delegating-app.js'

const text = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ text: string }>)[0].text

describe('serve-mcp: each call is a root run of its own', function () {
  this.timeout(120_000)
  let ctx: Context | undefined
  let client: Client | undefined

  afterEach(async () => {
    await client?.close()
    client = undefined
    await ctx?.stop()
    ctx = undefined
  })

  it('50 delegations in one session all succeed with the shipped defaults', async () => {
    ctx = await delegatingApp({})
    client = await connect(ctx)
    const answers: string[] = []
    for (let i = 0; i < 50; i++) {
      const result = await client.callTool({ name: 'subagent', arguments: { description: `echo ${i}`, prompt: `ECHO call ${i}` } })
      expect(result.isError, text(result)).to.not.equal(true)
      answers.push(text(result))
    }
    expect(answers).to.have.length(50)
    answers.forEach((answer, i) => expect(answer).to.contain(`child says call ${i}`))
  })

  it('a configured budget is each call\'s: one delegation per call, every call', async () => {
    ctx = await delegatingApp({ budget: { maxChildren: 1 } })
    client = await connect(ctx)
    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: 'subagent', arguments: { description: 'echo', prompt: `ECHO once ${i}` } })
      expect(text(result)).to.contain(`child says once ${i}`)
    }
  })

  it('progress notifications carry the child\'s line', async () => {
    ctx = await delegatingApp({})
    client = await connect(ctx)
    const messages: string[] = []
    const result = await client.callTool({ name: 'subagent', arguments: { description: 'echo', prompt: 'ECHO with progress' } }, undefined, {
      onprogress: (p) => messages.push(p.message ?? ''),
    })
    expect(text(result)).to.contain('child says with progress')
    expect(messages.length).to.be.greaterThan(0)
    expect(messages.some((m) => m.includes('child says with progress')), messages.join(' | ')).to.equal(true)
    // Every update says what the child did (a step, a tool call, usage, its text), never only the tool's kind.
    expect(messages.filter((m) => m === 'subagent' || m.length === 0 || m.length > 1024), messages.join(' | ')).to.deep.equal([])
    expect(messages.some((m) => /^step \d+$/.test(m)), messages.join(' | ')).to.equal(true)
  })
})
