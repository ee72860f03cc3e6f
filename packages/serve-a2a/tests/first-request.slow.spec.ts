/// <reference types="mocha" />
// The first request a load's port accepts is answered. The server used to listen, then load its request handler, its push
// parts and its express app, and only then attach the app: a request that came in between had no 'request' listener and
// Node left it hanging (a client reading the card at start, such as provider-a2a listed after serve-a2a in one cordis.yml,
// gave up at its cardTimeout). Each load here is polled with card requests from the moment it is loaded; the first one the
// port accepts must get its card. The app is now made and attached as the port is bound; one that cannot be made fails the
// listen and leaves nothing listening.
import { request } from 'node:http'
import { expect } from 'chai'
import { Context } from 'cordis'
import AgentRuntime from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { accepts, freePort } from '@cordis-subagents/test-support'
import A2aServer, { type Config } from '../src/index.js'
import { listen } from '../src/start-parts.js'
import { dropSchema, freshSchema, PG_URL } from './shared-support.js'

/** How long the first request may take to be answered (an answered one takes a few ms; an unanswered one never is). */
const ANSWER_MS = 2_000

/** A card request to 127.0.0.1:`port`: its status, `refused` when nothing accepts there, `no answer` past ANSWER_MS. */
function card(port: number): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/.well-known/agent-card.json', agent: false, timeout: ANSWER_MS }, (res) => {
      res.resume()
      res.on('end', () => resolve(String(res.statusCode)))
    })
    req.on('timeout', () => {
      req.destroy()
      resolve('no answer')
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' ? 'refused' : `error ${error.code}`))
    req.end()
  })
}

/** Loads the server `times` times on one fixed port; for each load, what the first request the port accepted got. */
async function firstAnswers(config: Partial<Config>, times: number): Promise<string[]> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, {})
  await ctx.start()
  const port = await freePort()
  const answers: string[] = []
  try {
    for (let i = 0; i < times; i++) {
      const fork = ctx.plugin(A2aServer, { ...config, port })
      let first = 'refused'
      const deadline = performance.now() + 10_000
      while (first === 'refused' && performance.now() < deadline) {
        first = await card(port)
        if (first === 'refused') await new Promise((resolve) => setImmediate(resolve))
      }
      answers.push(first)
      fork.dispose()
      await ctx.lifecycle.flush()
    }
  } finally {
    await ctx.stop()
  }
  return answers
}

describe('serve-a2a: the first request a load accepts', function () {
  this.timeout(30_000)

  it('is answered with the card, load after load', async () => {
    expect(await firstAnswers({ tokens: ['first-request-token-0123456789'] }, 5)).to.deep.equal(Array(5).fill('200'))
  })

  it('is answered with push notifications on (their parts are made before it listens)', async () => {
    const push = { enabled: true, allowHttp: true, allowHosts: ['127.0.0.1'] }
    expect(await firstAnswers({ push } as never, 3)).to.deep.equal(Array(3).fill('200'))
  })

  it('is answered with a shared store (its handler is made before it listens)', async () => {
    const schema = freshSchema()
    try {
      const shared = { url: PG_URL, schema, hostName: 'first-request', leaseMs: 1000 }
      expect(await firstAnswers({ tokens: ['first-request-token-0123456789'], shared } as never, 3)).to.deep.equal(Array(3).fill('200'))
    } finally {
      await dropSchema(schema)
    }
  })

  it('a request listener that cannot be made as the port is bound fails the listen, and nothing is left listening', async () => {
    const port = await freePort()
    const config = { host: '127.0.0.1', port, requestTimeout: 60_000, maxConnections: 10 } as Config
    const failed = await listen(config, () => { throw new Error('no listener') }).then(() => 'listened', (error: Error) => error.message)
    expect(failed).to.equal('no listener')
    expect(await accepts(port)).to.equal(false)
  })
})
