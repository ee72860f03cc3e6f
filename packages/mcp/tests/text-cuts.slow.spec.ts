/// <reference types="mocha" />
// A client's MCP server that does not start is reported to the client under its name, cut at 64 characters: the cut
// falls on a character boundary (it used to leave half an emoji, which a strict peer refuses in JSON). Slow: it
// connects to a closed local port.
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { expect } from 'chai'
import { Logger } from 'cordis'
import { client } from './helpers.js'

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** A local port nothing listens on (just closed). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('@cordis-subagents/mcp: a client\'s server that does not start is named without half an emoji', () => {
  it('the failure carries the head of the sent name, cut on a character boundary', async () => {
    const name = 'n'.repeat(63) + '\u{1F600}'
    const url = `http://127.0.0.1:${await closedPort()}/mcp`
    const policy = { ...client.DEFAULT_SENT_SERVER_POLICY, startupTimeout: 5_000 }
    const servers = await client.startSentServers([{ type: 'http', name, url }], policy, tmpdir(), new Logger('spec'))
    try {
      expect(servers.tools).to.deep.equal([])
      expect(servers.failed).to.have.length(1)
      expect(servers.failed[0].code).to.equal('MCP_CONNECT_FAILED')
      expect(LONE.test(servers.failed[0].name)).to.equal(false)
      expect(servers.failed[0].name).to.equal('n'.repeat(63))
    } finally {
      await servers.close()
    }
  })
})
