// The same plugins, unchanged, inside a Koishi 4.18 App (Koishi runs on cordis 3).
//
// `App` comes from `@koishijs/core` (the package `koishi` re-exports it from): under native ESM,
// `import { App } from 'koishi'` fails in koishi 4.18.11 itself (its lib/index.mjs pulls in
// @koishijs/loader, whose ESM entry default-imports a CommonJS file: "Loader.extensions is
// undefined"), and `require('koishi')` would bring in cordis' CommonJS build, a second Context class.
import { expect } from 'chai'
import { App } from '@koishijs/core'
import type { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as fork from '@cordis-subagents/provider-fork'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import * as workspaceTools from '@cordis-subagents/quickstart/workspace-tools'
import { ROOT } from './helpers.js'

describe('Koishi 4.18 App', function () {
  this.timeout(20_000)
  let app: App

  beforeEach(async () => {
    app = new App()
    // Koishi's Context type carries Koishi's own augmentations (e.g. a different `model`), so at
    // the type level it is not cordis' Context; at runtime it is, and the plugins load unchanged.
    const host = app as unknown as Context
    host.plugin(ToolRegistry)
    host.plugin(AgentRuntime, { model: 'scripted' })
    host.plugin(SubagentService)
    host.plugin(spawn, { name: 'spawn' })
    host.plugin(fork, { name: 'fork' })
    host.plugin(subagentTool, { provider: 'spawn', toolName: 'subagent' })
    host.plugin(subagentTool, { provider: 'fork', toolName: 'subagent_fork' })
    host.plugin(workspaceTools, { root: ROOT } as workspaceTools.Config)
    await app.start()
    await app.lifecycle.flush()
  })

  afterEach(async () => {
    await app.stop()
  })

  it('loads the plugins unchanged: services, both subagent tools and the workspace tools', () => {
    expect(app.tools.list().map((tool) => tool.name).sort())
      .to.deep.equal(['list_files', 'read_file', 'search_text', 'subagent', 'subagent_fork'])
    expect(app.subagents.list().map((provider) => provider.name).sort()).to.deep.equal(['fork', 'spawn'])
  })

  it('runs a delegation: the parent calls `subagent`, the spawned child reads a file and answers', async () => {
    const model = new ScriptedModel((request) => {
      const prompt = request.messages.find((m) => m.role === 'user')!.content
      const last = request.messages.at(-1)!
      if (prompt.startsWith('Read package.json')) {
        // The child: read the file, then answer from the tool output.
        if (last.role !== 'tool') return ScriptedModel.call('read_file', { path: 'package.json' })
        return { text: `the root package is ${JSON.parse(last.content).name}` }
      }
      if (last.role !== 'tool') return ScriptedModel.call('subagent', { description: 'read the root manifest', prompt: 'Read package.json and report its name.' })
      return { text: `child answered: ${last.content}` }
    }, { usage: { inputTokens: 10, outputTokens: 2 } })
    const dispose = app.agents.registerModel('scripted', model)
    const ends: string[] = []
    app.on('subagent/end', (info, result) => { ends.push(`${info.provider}:${info.depth}:${result.stopReason}`) })
    const parent = app.agents.create()
    try {
      const result = await parent.run('What is the root package called?')
      expect(result.stopReason).to.equal('completed')
      expect(result.text).to.equal('child answered: the root package is cordis-subagents')
      expect(ends).to.deep.equal(['spawn:1:completed'])
      // The child's two model calls are rolled up into the parent as delegated usage.
      expect(parent.usage.delegated).to.include({ inputTokens: 20, outputTokens: 4 })
      expect(parent.usage.own).to.include({ inputTokens: 20, outputTokens: 4 })
    } finally {
      await parent.dispose()
      dispose()
    }
  })

  it('unloading a provider in Koishi removes only its tool; reloading restores it', async () => {
    const scope = app.registry.get(fork as any)
    expect(scope, 'fork runtime').to.not.equal(undefined)
    app.registry.delete(fork as any)
    await app.lifecycle.flush()
    expect(app.tools.list().map((tool) => tool.name)).to.not.include('subagent_fork')
    expect(app.tools.list().map((tool) => tool.name)).to.include('subagent')
    ;(app as unknown as Context).plugin(fork, { name: 'fork' })
    await app.lifecycle.flush()
    expect(app.tools.list().map((tool) => tool.name)).to.include('subagent_fork')
  })
})
