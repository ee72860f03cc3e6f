/// <reference types="mocha" />
import { expect } from 'chai'
import { ScriptedModel, type GenerateRequest, type ToolMessage } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import { assertNoLeftovers, FAST, fixtureArgs, harness, type Harness } from './helpers.js'

/** The content of the last tool result the model was shown. */
function lastToolResult(request: GenerateRequest): ToolMessage {
  const tool = request.messages.filter((message): message is ToolMessage => message.role === 'tool').at(-1)
  if (!tool) throw new Error('no tool result in the transcript')
  return tool
}

describe('provider-acp: end to end through the subagent_acp tool from a scripted parent', () => {
  let h: Harness

  beforeEach(async () => {
    h = await harness()
  })

  afterEach(async () => {
    await h.stop()
    assertNoLeftovers()
  })

  async function setup(mode: string, arg?: string) {
    const { ctx } = h
    ctx.plugin(SubagentService)
    ctx.plugin(AcpProvider, {
      command: process.execPath, args: fixtureArgs(mode, arg), description: 'Fixture agent over ACP', ...FAST,
    })
    ctx.plugin(SubagentTool, { provider: 'acp', toolName: 'subagent_acp' })
    await ctx.lifecycle.flush()
    const model = new ScriptedModel([
      ScriptedModel.call('subagent_acp', { description: 'Ask the ACP child', prompt: 'What is the answer? Reply with the number.' }),
      (request) => {
        const result = lastToolResult(request)
        return { text: `${result.isError ? 'Child failed' : 'Child said'}: ${result.content}` }
      },
    ])
    ctx.agents.registerModel('scripted', model)
    return ctx.agents.create({ model: 'scripted' })
  }

  it('the parent delegates over ACP and gets the child\'s final answer back', async () => {
    const parent = await setup('stream')
    const spec = h.ctx.tools.view().list().find((tool) => tool.name === 'subagent_acp')!
    expect(spec.description).to.match(/does not see this conversation/)
    expect(spec.description).to.match(/Fixture agent over ACP/)
    const result = await parent.run('Find the answer using a subagent.')
    await parent.dispose()
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.equal('Child said: Final answer: 42')
    expect(parent.usage.delegated).to.deep.include({ inputTokens: 10, outputTokens: 5 })
  })

  it('a child that crashes comes back as a tool error with the diagnostic and partial output', async () => {
    const parent = await setup('crash')
    const result = await parent.run('Find the answer using a subagent.')
    await parent.dispose()
    expect(result.stopReason).to.equal('completed')
    expect(result.text).to.match(/^Child failed: Subagent failed\./)
    expect(result.text).to.match(/exited with code 3 during the prompt/)
    expect(result.text).to.match(/Partial output[^\n]*\nabout to crash/)
    expect(result.text).to.not.match(/sk-live/)
  })
})
