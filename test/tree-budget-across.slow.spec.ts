// A tree budget held across process and host boundaries (issue 25): a root with `maxSteps: 6`
// delegates, in one step, to two ACP children (serve-acp through its bin: real subprocesses) and
// two A2A children (serve-a2a over HTTP on 127.0.0.1). Every served agent's model is one loopback
// OpenAI-compatible server whose every answer is another tool call, so no child would ever stop
// by itself; the server counts each model call, in whichever process it was made. Before the
// crossing reported work back, each child got the whole remainder and the tree made about 21
// calls (42 with 8 children); now each child reports its steps as it goes, the parent charges
// them, and a child whose report takes the tree past the limit is stopped with `budget`.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as acp from '@cordis-subagents/provider-acp'
import * as a2a from '@cordis-subagents/provider-a2a'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import * as modelOpenai from '@cordis-subagents/model-openai'
import A2aServer from '@cordis-subagents/serve-a2a'
import { ROOT } from './helpers.js'

const SERVE_ACP_BIN = join(ROOT, 'packages/serve-acp/lib/bin.js')
const MAX_STEPS = 6
const CHILDREN = 4

/** A loopback chat-completions server that answers every request with one `echo` tool call, after `delayMs`. */
async function loopingModelServer(delayMs: number): Promise<{ url: string; calls: () => number; close: () => Promise<void> }> {
  let calls = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      calls++
      const body = JSON.stringify({
        id: `c${calls}`, object: 'chat.completion', created: 0, model: 'loop',
        choices: [{
          index: 0, finish_reason: 'tool_calls',
          message: { role: 'assistant', content: null, tool_calls: [{ id: `call_${calls}`, type: 'function', function: { name: 'echo', arguments: '{"text":"again"}' } }] },
        }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      })
      setTimeout(() => {
        if (res.destroyed) return
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        res.end(body)
      }, delayMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls: () => calls,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

const echoTool = {
  name: 'echo-tool', inject: ['tools'],
  apply: (ctx: Context) => {
    ctx.tools.register({ name: 'echo', description: 'Echoes its text.', input: z.object({ text: z.string() }), execute: async ({ text }) => ({ content: text }) })
  },
}

describe('a tree budget across ACP and A2A children (the crossing reports work back)', function () {
  this.timeout(120_000)
  let dir: string
  let model: Awaited<ReturnType<typeof loopingModelServer>>
  let served: Context | undefined
  let root: Context | undefined

  before(() => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: ROOT, stdio: 'ignore' })
  })

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tree-budget-'))
    // A model call takes longer than a spend report's trip up and the cancel's trip down (real calls
    // take seconds; a report milliseconds): that is what bounds a child to one call past the limit.
    model = await loopingModelServer(250)
  })

  afterEach(async () => {
    await root?.stop()
    await served?.stop()
    root = served = undefined
    await model.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it(`a root with maxSteps ${MAX_STEPS} spends at most ${MAX_STEPS} steps plus one in-flight call per live child`, async () => {
    // The ACP child: a cordis app from a yml, served over stdio by the bin, its model on the loopback server.
    const childYml = join(dir, 'child.yml')
    writeFileSync(childYml, [
      `- { id: tools, name: '@cordis-subagents/tools' }`,
      `- { id: agents, name: '@cordis-subagents/agent', config: { model: openai, maxSteps: 100 } }`,
      `- { id: openai, name: '@cordis-subagents/model-openai', config: { name: openai, baseURL: ${JSON.stringify(model.url)}, apiKey: test } }`,
      `- id: echo`,
      `  name: ${JSON.stringify(join(ROOT, 'test/fixtures/tree-budget/echo-tool.mjs'))}`,
      `- { id: serve, name: '@cordis-subagents/serve-acp' }`,
      '',
    ].join('\n'))

    // The A2A host: another cordis app (its own ctx.agents) serving over HTTP on 127.0.0.1.
    served = new Context()
    served.plugin(ToolRegistry)
    served.plugin(AgentRuntime, { model: 'openai', maxSteps: 100 })
    served.plugin(modelOpenai, { name: 'openai', baseURL: model.url, apiKey: 'test' })
    served.plugin(echoTool)
    served.plugin(A2aServer, {})
    await served.start()
    await served.lifecycle.flush()
    const server = served.get('a2aServer') as A2aServer
    expect(server.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/)

    // The root host: two tools, one per transport; its model delegates twice on each in one step.
    root = new Context()
    root.plugin(ToolRegistry)
    root.plugin(AgentRuntime, {})
    root.plugin(SubagentService)
    root.plugin(echoTool)
    root.plugin(acp, { name: 'acp', command: process.execPath, args: [SERVE_ACP_BIN, childYml], cwd: dir } as acp.Config)
    root.plugin(a2a, { name: 'remote', url: server.url, bearerToken: server.token! } as a2a.Config)
    root.plugin(subagentTool, { provider: 'acp', toolName: 'subagent_acp' })
    root.plugin(subagentTool, { provider: 'remote', toolName: 'subagent_remote' })
    await root.start()
    await root.lifecycle.flush()
    await root.subagents.ready('remote', { timeout: 30_000 })
    const call = (name: string, i: number) => ScriptedModel.call(name, { description: `child ${i}`, prompt: 'loop on echo' })
    root.agents.registerModel('root', new ScriptedModel([
      { toolCalls: [call('subagent_acp', 1), call('subagent_acp', 2), call('subagent_remote', 3), call('subagent_remote', 4)].flatMap((reply) => reply.toolCalls!) },
      { text: 'done' },
    ]))
    const parent = root.agents.create({ model: 'root', budget: { maxSteps: MAX_STEPS } })
    const result = await parent.run('fan out')

    // Every child was stopped by the tree's budget, never ran on to its own carved remainder.
    const toolResults = parent.transcript.messages.filter((message) => message.role === 'tool')
    expect(toolResults).to.have.length(CHILDREN)
    for (const message of toolResults) {
      expect(message.isError, message.content).to.equal(true)
      expect(message.content).to.match(/budget/i)
    }
    const rootSteps = result.steps
    const childCalls = model.calls()
    const total = rootSteps + childCalls
    console.log(`      tree budget across ACP and A2A: root ${rootSteps} + children ${childCalls} model calls (bound ${MAX_STEPS + CHILDREN})`)
    expect(total, `root ${rootSteps} + children ${childCalls} model calls`).to.be.at.most(MAX_STEPS + CHILDREN)
    // What the tree charged matches what was actually called (no call went uncounted).
    expect(parent.budget.spent.steps).to.be.at.least(Math.min(total, MAX_STEPS + 1))
    await parent.dispose()
  })
})
