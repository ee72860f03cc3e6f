/// <reference types="mocha" />
// Issue 40: codex-acp sends Codex's own warning as message text, with nothing between it and the
// answer. Its known warnings are matched against one whole chunk, for that agent only, in linear time.
import { expect } from 'chai'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { isAgentNotice } from '../src/agent-notices.js'
import { OutputBuffer } from '../src/output.js'
import { Progress } from '../src/progress.js'
import { UsageTracker } from '../src/usage.js'
import { Redactor } from '@cordis-subagents/shared'

const WARNING = 'Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.'

function stream(agentName: string | undefined, chunks: string[]) {
  const output = new OutputBuffer(64 * 1024)
  const updates: SubagentUpdate[] = []
  const progress = new Progress({
    output, usage: new UsageTracker(), redactor: new Redactor([]), emit: (update) => updates.push(update),
    ignoredUsage: () => {}, agentName: () => agentName,
  })
  for (const text of chunks) progress.handle({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } })
  return { output: output.text(), updates }
}

describe('provider-acp: an agent\'s known notices sent as message text', () => {
  it('codex-acp: its model-metadata warning is a status update, never part of the output', () => {
    const { output, updates } = stream('codex-acp', [WARNING, 'FINAL ', 'ANSWER'])
    expect(output).to.equal('FINAL ANSWER')
    expect(updates[0]).to.deep.equal({ kind: 'status', text: WARNING })
  })

  it('the same text from another agent, or as part of a longer chunk, is the agent\'s words', () => {
    expect(stream('claude-agent-acp', [WARNING, 'FINAL ANSWER']).output).to.equal(`${WARNING}FINAL ANSWER`)
    expect(stream(undefined, [WARNING]).output).to.equal(WARNING)
    expect(stream('codex-acp', [`${WARNING} And more.`]).output).to.equal(`${WARNING} And more.`)
    expect(isAgentNotice('codex-acp', `Model metadata for \`${'m'.repeat(300)}\` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.`)).to.equal(false)
  })

  it('a hostile 8 MiB chunk that starts like the warning is the agent\'s words (its length rules it out before any scan)', () => {
    const huge = `Model metadata for \`${'a'.repeat(8 * 1024 * 1024)}\` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.`
    expect(isAgentNotice('codex-acp', huge)).to.equal(false)
  })
})
