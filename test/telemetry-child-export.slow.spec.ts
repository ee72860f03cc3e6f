// A child process whose trace export fails says so through its parent (issue 45 item 7): the quick
// start's ACP agent, started by provider-acp, exports its spans to an OTLP receiver on 127.0.0.1 that
// refuses every batch; the agent's warning (OTEL_EXPORT_FAILED on its stderr) is repeated by the
// parent's logger at warn level, scrubbed of the collector's key, instead of staying in the child's
// stderr tail.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import * as acp from '@cordis-subagents/provider-acp'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as workspaceTools from '@cordis-subagents/quickstart/workspace-tools'
import { ACP_AGENT, buildQuickstart, eventually, ROOT } from './helpers.js'
import { type Host, startHost } from './support/host.js'
import { lastUserText, toolResults } from './support/traced-host.js'

const API_KEY = 'collector-key-5f1e9a2b7c3d4e60'

/** An OTLP/HTTP receiver that answers every batch with HTTP 500. */
async function refusingReceiver(): Promise<{ url: string; batches: () => number; close(): Promise<void> }> {
  let batches = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      batches++
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: `cannot store spans (key ${req.headers['x-api-key']})` }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    batches: () => batches,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

function delegateOnce(request: GenerateRequest): ScriptedResponse {
  if (lastUserText(request) !== 'ROOT') return { text: 'unused' }
  if (toolResults(request).length) return { text: 'parent done' }
  return { toolCalls: [{ id: 'call-1', name: 'subagent_acp', input: { description: 'look', prompt: 'list the files' } }] }
}

describe('a child process\'s failed trace export is reported by its parent', function () {
  this.timeout(60_000)
  let host: Host | undefined
  let receiver: Awaited<ReturnType<typeof refusingReceiver>> | undefined

  before(() => buildQuickstart())

  afterEach(async () => {
    // The agent flushes its spans while it exits: stop the host, then wait for the provider to reap it.
    const provider = host?.ctx.subagents.get('acp') as acp.AcpProvider | undefined
    await host?.stop()
    await provider?.reaped()
    host = undefined
    await receiver?.close()
    receiver = undefined
  })

  it('provider-acp repeats the ACP agent\'s OTEL_EXPORT_FAILED warning at warn level, without the collector\'s key', async () => {
    receiver = await refusingReceiver()
    const model = new ScriptedModel(delegateOnce)
    host = await startHost({
      captureLogs: true,
      agents: { model: 'script' },
      before(ctx: Context) {
        ctx.plugin({ name: 'script-model', inject: ['agents'], apply: (ctx: Context) => { ctx.agents.registerModel('script', model) } })
        ctx.plugin(workspaceTools, { root: ROOT } as never)
        ctx.plugin(acp, {
          name: 'acp', command: process.execPath, args: ACP_AGENT, cwd: ROOT,
          env: {
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.url,
            OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${API_KEY}`,
            // The batch goes out 50 ms after the spans end, while the agent still runs.
            OTEL_BSP_SCHEDULE_DELAY: '50',
          },
        } as acp.Config)
        ctx.plugin(SubagentTool, { provider: 'acp', toolName: 'subagent_acp' })
      },
    })
    const agent = host.ctx.agents.create({})
    try {
      const result = await agent.run('ROOT')
      expect(result.text).to.equal('parent done')
    } finally {
      await agent.dispose()
    }
    const relayed = () => host!.logs.filter((record) => record.type === 'warn' && record.content.includes('OTEL_EXPORT_FAILED'))
    await eventually(() => relayed().length > 0, 30_000)
    expect(relayed(), 'the relayed warning').to.have.length(1)
    expect(receiver.batches()).to.be.at.least(1)
    const [warning] = relayed()
    expect(warning.content).to.include('the ACP agent of provider "acp"')
    expect(warning.content).to.include(`OTLP export to ${receiver.url}/v1/traces failed with HTTP 500`)
    expect(host.logs.map((record) => record.content).join('\n')).to.not.include(API_KEY)
  })
})
