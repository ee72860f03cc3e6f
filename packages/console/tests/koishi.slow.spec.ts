// The console inside a Koishi 4.18 App (Koishi runs on cordis 3): it loads unchanged and serves
// the tree of a delegation run there. (A page of @koishijs/plugin-console: packages/koishi-console.)
import { expect } from 'chai'
import { App } from '@koishijs/core'
import type { Context } from 'cordis'
import { z } from 'zod'
import Tools from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import SubagentConsole, { type NodeView } from '@cordis-subagents/console'
import { bearer, call } from './helpers.js'

describe('console in a Koishi 4.18 App', function () {
  this.timeout(20_000)

  it('loads unchanged and shows a delegation of an agent run in Koishi', async () => {
    const app = new App()
    const host = app as unknown as Context
    host.plugin(Tools)
    host.plugin(AgentRuntime, { model: 'scripted' })
    host.plugin(SubagentService)
    host.plugin(spawn, { name: 'spawn' })
    host.plugin(subagentTool, { provider: 'spawn', toolName: 'subagent' })
    host.plugin(SubagentConsole)
    await app.start()
    try {
      await app.lifecycle.flush()
      host.tools.register({ name: 'noop', description: 'noop', input: z.strictObject({}), execute: () => ({ content: 'ok' }) })
      host.agents.registerModel('scripted', new ScriptedModel((request) => {
        const last = request.messages.at(-1)!
        if (request.messages[0].content === 'child task') return { text: 'child done' }
        return last.role === 'tool' ? { text: 'parent done' } : ScriptedModel.call('subagent', { description: 'in koishi', prompt: 'child task' })
      }))
      expect((await host.agents.create({ label: 'koishi-root' }).run('go')).stopReason).to.equal('completed')
      const view = host.subagentConsole
      const { nodes } = JSON.parse((await call(view.port, '/api/snapshot', { headers: bearer(view.token) })).body) as { nodes: NodeView[] }
      expect(nodes.map((node) => [node.label, node.transport, node.stopReason])).to.deep.equal([
        ['koishi-root', 'root', 'completed'],
        ['in koishi', 'spawn', 'completed'],
      ])
    } finally {
      await app.stop()
    }
  })
})
