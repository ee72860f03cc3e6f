// The console's `transports` config names the transport shown for a provider; a provider not in it gets the transport
// the console works out itself. A provider named like a member of every object (`constructor`, `toString`, `__proto__`,
// names the provider name rule lets through) is not in it either: it never shows a function or an object as its transport.
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService, { type SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { checkedConfig } from '../src/config.js'
import { nodeView } from '../src/node-view.js'
import { pageJson } from '../src/page-json.js'
import { TreeStore } from '../src/tree-store.js'

describe('console: configured transports', () => {
  let ctx: Context
  afterEach(() => ctx?.stop())

  it('apply to the providers named in them only, not to names every object has', async () => {
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, {})
    ctx.plugin(SubagentService, {})
    await ctx.start()
    const config = checkedConfig({ transports: { acp: 'acp' } })
    const store = new TreeStore(config, () => {}, () => {})
    const host = { store, subagents: ctx.subagents, transports: config.transports }
    const shown = (provider: string) => {
      const info = { runId: `run-${provider}`, provider, parentId: 'p1', depth: 1, startedAt: Date.now(), label: 'x' } as SubagentRunInfo
      store.start(info)
      const view = nodeView(host, store.nodes.get(info.runId)!)
      return { view: view.transport, page: (JSON.parse(pageJson(view)) as { transport?: unknown }).transport }
    }
    expect(shown('acp')).to.deep.equal({ view: 'acp', page: 'acp' })
    const unconfigured = shown('plain')
    expect(unconfigured.view).to.be.a('string')
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) expect(shown(name), name).to.deep.equal(unconfigured)
  })
})
