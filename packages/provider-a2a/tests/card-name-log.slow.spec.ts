// What the remote's agent card says about itself reaches the host's log only cleaned: a card whose name carries terminal
// escapes (OSC 52 writes the clipboard, CSI 2J clears the screen, a carriage return forges a log line) is logged at
// debug level (the line naming the remote agent) without them. A real cordis app with the real service and plugin, a card on 127.0.0.1.
import { createServer, type Server } from 'node:http'
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import * as A2a from '@cordis-subagents/provider-a2a'
import { eventually } from '@cordis-subagents/test-support'

const NAME = 'helper\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[H\r[I] fake line'
/** What must never reach a terminal: C0 but tab and newline, DEL, C1. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

describe('provider-a2a: the remote agent card\'s name in the host\'s log', function () {
  this.timeout(20_000)
  let server: Server
  let ctx: Context
  const logged: string[] = []
  const target = { colors: 0, showTime: '', print: (text: string) => void logged.push(text), levels: { base: 3 } } as unknown as Logger.Target

  before(async () => {
    server = createServer((_req, res) => {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({
        name: NAME, description: 'd', version: '1', capabilities: {}, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
        skills: [], supportedInterfaces: [{ url: base, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    Logger.targets.push(target)
  })
  after(async () => {
    Logger.targets.splice(Logger.targets.indexOf(target), 1)
    await new Promise((resolve) => server.close(resolve))
  })
  afterEach(() => ctx?.stop())

  it('is logged without its escapes or a forged line', async () => {
    ctx = new Context()
    ctx.plugin(SubagentService, {})
    await ctx.start()
    ctx.plugin(A2a, { name: 'remote', url: `http://127.0.0.1:${(server.address() as { port: number }).port}` } as A2a.Config)
    const line = await eventually(() => logged.find((text) => text.includes('the remote agent')), 'the remote agent logged')
    expect(line).to.include('helper')
    expect(CONTROL.test(line), JSON.stringify(line)).to.equal(false)
  })
})
