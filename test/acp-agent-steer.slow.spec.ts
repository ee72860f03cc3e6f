// Steering the quick start's ACP agent (acp-agent.yml through serve-acp) through the real provider-acp: a
// follow-up sent while the child works becomes a second session/prompt in the same session, the
// agent answers it with the first turn in its history, and usage adds up over both turns.
import { expect } from 'chai'
import type { Context } from 'cordis'
import { ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { buildQuickstart } from './helpers.js'
import { startQuickstartAcpHost } from './support/quickstart-acp-host.js'

describe('quick start ACP agent: a follow-up message (send) is a second prompt in the same session', function () {
  this.timeout(30_000)
  let ctx: Context

  before(() => buildQuickstart())

  afterEach(async () => {
    await ctx?.stop()
  })

  it('answers the follow-up with the first turn in its history; the result is the last turn\'s, usage is the sum', async () => {
    // Each demo model reply takes 300 ms, so the first turn (two model calls) is still running when the follow-up is sent.
    ctx = await startQuickstartAcpHost({ acp: { env: { QUICKSTART_DEMO_DELAY: '300' } } })
    const parent = ctx.agents.create()
    const updates: Array<{ kind: string; text?: string; input?: number; output?: number }> = []
    const run = await ctx.subagents.delegate('acp', {
      prompt: `${ROOT_PROMPT} and report its workspaces and npm scripts.`,
      parent,
      signal: new AbortController().signal,
      onUpdate: (update) => updates.push({
        kind: update.kind, text: update.text, input: update.usage?.inputTokens, output: update.usage?.outputTokens,
      }),
    })
    const followUp = 'Which of those scripts runs the tests?'
    run.send(followUp)
    const result = await run.result
    await run.dispose()
    await parent.dispose()

    expect(result.stopReason, result.diagnostic).to.equal('completed')
    // The demo model answers a later prompt of a session (one with earlier user messages) by naming it.
    expect(result.output).to.contain(`("${followUp}")`)
    expect(result.output).to.not.contain('workspaces')
    const sent = updates.findIndex((update) => update.kind === 'status' && update.text === 'follow-up message sent (turn 2)')
    expect(sent, JSON.stringify(updates)).to.be.greaterThan(0)
    // The figure at the end of turn 1 (reported before the follow-up went out), then turn 2's own
    // output on top: the demo model counts ceil(characters / 4) of its text plus "[]" (no tool calls).
    const firstTurn = updates.slice(0, sent).findLast((update) => update.kind === 'usage')
    expect(firstTurn?.output).to.be.greaterThan(0)
    const secondTurnOutput = Math.ceil((result.output.length + 2) / 4)
    expect(result.usage?.outputTokens).to.equal(firstTurn!.output! + secondTurnOutput)
    expect(result.usage!.inputTokens).to.be.greaterThan(firstTurn!.input!)
  })
})
