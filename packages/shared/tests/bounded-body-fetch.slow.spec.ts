/// <reference types="mocha" />
// boundedBody over a real fetch from a real server on 127.0.0.1 (slow tier: it opens a server).
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { boundedBody } from '@cordis-subagents/shared'
import { within } from '@cordis-subagents/test-support'

describe('shared boundedBody over a real fetch', () => {
  it('a cancelled body of a real fetch stops the request: the server sees its connection close', async () => {
    let closed: (() => void) | undefined
    const gone = new Promise<void>((resolve) => { closed = resolve })
    const server = createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const timer = setInterval(() => res.write('data: x\n\n'), 5)
      res.on('close', () => { clearInterval(timer); closed!() })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const controller = new AbortController()
      const seen = { aborted: [] as unknown[], done: 0 }
      const b = {
        maxBytes: 1_000_000, tooLarge: () => new Error('over'), done: () => void seen.done++,
        abort: (reason: unknown) => { seen.aborted.push(reason); controller.abort(reason) },
      }
      const reader = boundedBody(await fetch(`http://127.0.0.1:${port}/`, { signal: controller.signal }), b).body!.getReader()
      expect((await reader.read()).done).to.equal(false)
      await reader.cancel('enough')
      await within(gone, 5000, 'the server to see the connection close')
      expect(seen.aborted).to.deep.equal(['enough'])
      expect(seen.done).to.be.greaterThan(0)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
