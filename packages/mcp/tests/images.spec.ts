/// <reference types="mocha" />
// A tool result's images (an MCP tool's, ToolResult.images) reach the model: the agent keeps them on the
// tool message it hands the next model call (model-openai sends them when it is told the model accepts images).
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type GenerateRequest, ScriptedModel, type ToolMessage } from '@cordis-subagents/agent'

describe('@cordis-subagents/mcp: images of a tool result reach the model', () => {
  it('the next model call reads the tool message with the result\'s images', async () => {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'look' })
    const seen: GenerateRequest[] = []
    ctx.plugin({
      name: 'look', inject: ['agents', 'tools'],
      apply: (c: Context) => {
        c.tools.register({
          name: 'shot', description: 'A picture.', input: z.object({}),
          execute: () => ({ content: '[image image/png, 3 bytes; shown to models that accept images]', images: [{ mimeType: 'image/png', data: 'AAAA' }] }),
        })
        c.agents.registerModel('look', new ScriptedModel((request) => {
          seen.push(request)
          return seen.length === 1 ? ScriptedModel.call('shot', {}) : ScriptedModel.text('a picture')
        }))
      },
    })
    await ctx.start()
    await ctx.lifecycle.flush()
    try {
      const agent = ctx.agents.create({})
      const result = await agent.run('look')
      expect(result.text).to.equal('a picture')
      const tool = seen[1].messages.find((m) => m.role === 'tool') as ToolMessage
      expect(tool.images).to.deep.equal([{ mimeType: 'image/png', data: 'AAAA' }])
    } finally {
      await ctx.stop()
    }
  })
})
