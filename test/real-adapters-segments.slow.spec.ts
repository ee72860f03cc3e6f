// Issue 27 item 2: Codex sends its agent messages without a messageId, so provider-acp glued
// separate messages into one output ("…cause issues.FINAL ANSWER"). These are the assertions for the
// fixed behaviour: the parent gets the last message segment only.
//
// Recorded on the real-adapters branch (before the fix), with codex-acp 0.16.0 and the same scripts:
// - unknown model:   "Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can
//                     degrade performance and cause issues.FINAL ANSWER"
// - update_plan:     "Let me check first; skipping this would cause issues.FINAL ANSWER"
// - exec_command:    "FINAL ANSWER" there; since, the same script gave "…cause issues.FINAL ANSWER": without
//                     bubblewrap the sandboxed command shows no tool_call, only the usage_update that ends
//                     the model response (the boundary provider-acp now uses)
//
// Issue 40, the raw ACP traffic both ways with codex-acp 0.16.0: the unknown-model warning goes out 2-5 ms
// after our session/prompt, before Codex asks the model, and the next update is the model's first text chunk
// (Codex's turn-start events are only logged; no messageId, no notice). The first case passed only where
// codex-acp's available_commands_update, sent on a 200 ms timer after session/new, happened to land in
// between; that update no longer ends a message. provider-acp now knows this one warning of codex-acp as a
// notice sent as text (src/agent-notices.ts: that agent, one whole chunk), so the case holds on any machine.
import { expect } from 'chai'
import type { ModelRequest, Reply } from './support/fake-model-server.js'
import { CODEX_KNOWN_MODEL, type RealAgent } from './support/real-agents.js'
import { useRealAgent } from './support/real-agent-hooks.js'

const FINAL = 'FINAL ANSWER'
const BEFORE = 'Let me check first; skipping this would cause issues.'

/** Text, then a call of `tool` (when given) with `input`, then the final text once the result is back. */
function script(tool?: string, input: Record<string, unknown> = {}) {
  return (request: ModelRequest): Reply => {
    if (!request.tools.length) return { text: 'side request' }
    if (!tool || request.toolResults.length) return { text: FINAL }
    return { text: BEFORE, tool, input }
  }
}

describe('real codex ACP adapter: separate agent messages without messageId are not glued together', function () {
  this.timeout(120_000)
  const real = useRealAgent()
  let agent: RealAgent | undefined

  /** How many tool results each model request (with tools) carried. */
  const resultsPerRequest = () => agent!.model.requests.filter((request) => request.tools.length)
    .map((request) => request.toolResults.length)

  async function delegate(play: ReturnType<typeof script>, codexModel = CODEX_KNOWN_MODEL) {
    agent = await real.agent('codex', play, { codexModel })
    const host = await real.app()
    return host.delegate('Answer after checking.')
  }

  it('Codex\'s warning message before the answer (a model it does not know) is not part of the output', async () => {
    const result = await delegate(script(), 'fake-model')
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    expect(result.text).to.equal(FINAL)
  })

  it('text, then update_plan (an ACP plan update, not a tool_call), then the answer: the output is the answer', async () => {
    const result = await delegate(script('update_plan', { plan: [{ step: 'check', status: 'in_progress' }] }))
    expect(resultsPerRequest()).to.deep.equal([0, 1])
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    expect(result.text).to.equal(FINAL)
  })

  it('text, then exec_command (an ACP tool_call), then the answer: the output is the answer', async () => {
    const result = await delegate(script('exec_command', { cmd: 'echo segment-probe' }))
    expect(resultsPerRequest()).to.deep.equal([0, 1])
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    expect(result.text).to.equal(FINAL)
  })
})
