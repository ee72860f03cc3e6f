// Issue 45 item 7: the quick start's A2A server (a process the a2a-host plugin starts) exports its
// spans to an OTLP receiver on 127.0.0.1 that refuses every batch; its OTEL_EXPORT_FAILED warning
// is repeated by the host's logger at warn level instead of staying in the server's stderr.
import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { Context } from 'cordis'
import QuickstartA2a from '@cordis-subagents/quickstart/a2a-host'
import { alive, buildQuickstart, eventually, ROOT } from './helpers.js'
import { captureLogs } from './support/logs.js'

describe('the quick start\'s A2A host repeats its server\'s failed trace export', function () {
  this.timeout(60_000)
  let receiver: Server

  before(() => buildQuickstart())
  beforeEach(async () => {
    receiver = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end('{"error":"no"}')
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  })
  afterEach(async () => {
    receiver.closeAllConnections()
    await new Promise<void>((resolve) => receiver.close(() => resolve()))
  })

  it('a task\'s spans are refused by the receiver: the host logs the server\'s OTEL_EXPORT_FAILED at warn level', async () => {
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
    const logs = captureLogs()
    const ctx = new Context()
    let pid: number | undefined
    try {
      ctx.plugin(QuickstartA2a, {
        root: ROOT,
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', QUICKSTART_DEMO_DELAY: '0' },
      })
      await ctx.start()
      await ctx.lifecycle.flush()
      pid = ctx.quickstartA2a.pid
      const response = await fetch(`${ctx.quickstartA2a.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${ctx.quickstartA2a.token}` },
        body: JSON.stringify({
          jsonrpc: '2.0', id: 1, method: 'SendMessage',
          params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'list the files' }] } },
        }),
      })
      expect(response.status).to.equal(200)
      await response.arrayBuffer()
      const relayed = () => logs.records.filter((record) => record.type === 'warn' && record.content.includes('OTEL_EXPORT_FAILED'))
      await eventually(() => relayed().length > 0, 30_000)
      expect(relayed(), 'the relayed warning').to.have.length.of.at.least(1)
      expect(relayed()[0].content).to.include('the A2A server (pid')
      expect(relayed()[0].content).to.include(`OTLP export to ${endpoint}/v1/traces failed with HTTP 500`)
    } finally {
      await ctx.stop()
      logs.restore()
      if (pid !== undefined) expect(await eventually(() => !alive(pid!), 10_000)).to.equal(true)
    }
  })
})
