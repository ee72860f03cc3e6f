/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { ToolError, type ToolSuspension } from '@cordis-subagents/tools'
import { makeExec, makeTool, registering, setup } from './helpers.js'

const suspension: ToolSuspension = { question: { id: 'q-1', kind: 'ask', text: 'which one?', path: [] }, state: { n: 1 } }

describe('suspend and resume through a view', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('execute passes a suspension on when the tool can resume; view.resume calls tool.resume with the answer, the suspension and the exec', async () => {
    const seen: unknown[] = []
    ctx.plugin(registering(makeTool('asker', {
      execute: () => ({ content: '', suspend: suspension }),
      resume: (answer, given, exec) => {
        seen.push(answer, given, exec.toolCallId)
        return { content: `got ${answer}`, metadata: { n: 1 } }
      },
    })))
    await ctx.lifecycle.flush()
    const view = ctx.tools.view()
    const first = await view.execute({ name: 'asker', input: { text: 'x' } }, makeExec())
    expect(first.suspend).to.deep.equal(suspension)
    const second = await view.resume({ name: 'asker', input: { text: 'x' } }, 'the left one', suspension, makeExec({ toolCallId: 'call-9' }))
    expect(second).to.deep.equal({ content: 'got the left one', metadata: { n: 1 } })
    expect(seen).to.deep.equal(['the left one', suspension, 'call-9'])
  })

  it('a suspension from a tool without resume is an error result; so is resuming it', async () => {
    ctx.plugin(registering(makeTool('asker', { execute: () => ({ content: '', suspend: suspension }) })))
    await ctx.lifecycle.flush()
    const view = ctx.tools.view()
    const result = await view.execute({ name: 'asker', input: { text: 'x' } }, makeExec())
    expect(result.isError).to.equal(true)
    expect(result.suspend).to.equal(undefined)
    expect(result.content).to.match(/asked a question \(suspend\) but cannot be resumed/)
    const resumed = await view.resume({ name: 'asker', input: {} }, 'a', suspension, makeExec())
    expect(resumed).to.deep.include({ isError: true })
  })

  it('resume never throws: a tool that is gone or hidden, an aborted signal, a throwing or malformed resume become error results', async () => {
    ctx.plugin(registering(
      makeTool('thrower', { resume: () => { throw new Error('boom') } }),
      makeTool('malformed', { resume: () => 42 as never }),
      makeTool('hidden', { resume: () => ({ content: 'never' }) }),
    ))
    await ctx.lifecycle.flush()
    const view = ctx.tools.view().restrict({ deny: ['hidden'] })
    const aborted = new AbortController()
    aborted.abort()
    const results = await Promise.all([
      view.resume({ name: 'gone', input: {} }, 'a', suspension, makeExec()),
      view.resume({ name: 'hidden', input: {} }, 'a', suspension, makeExec()),
      view.resume({ name: 'thrower', input: {} }, 'a', suspension, makeExec()),
      view.resume({ name: 'malformed', input: {} }, 'a', suspension, makeExec()),
      view.resume({ name: 'thrower', input: {} }, 'a', suspension, makeExec({ signal: aborted.signal })),
    ])
    expect(results.map((result) => result.isError)).to.deep.equal([true, true, true, true, true])
    expect(results[0].content).to.match(/"gone" is no longer available/)
    expect(results[1].content).to.match(/"hidden" is no longer available/)
    expect(results[2].content).to.equal('Tool "thrower" failed when resumed: boom')
    expect(results[3].content).to.match(/returned an invalid result/)
    expect(results[4].content).to.match(/was not resumed: the call was aborted/)
  })

  it('a resumed result is capped like an executed one', async () => {
    ctx.plugin(registering(makeTool('big', { resume: () => ({ content: 'x'.repeat(200 * 1024) }) })))
    await ctx.lifecycle.flush()
    const result = await ctx.tools.view().resume({ name: 'big', input: {} }, 'a', suspension, makeExec())
    expect(Buffer.byteLength(result.content)).to.be.at.most(100 * 1024)
    expect(result.content).to.match(/cut \d+ bytes/)
  })

  it('register rejects a resume that is not a function', () => {
    expect(() => ctx.tools.register(makeTool('odd', { resume: 'yes' as never }))).to.throw(ToolError, /resume that is not a function/)
  })
})
