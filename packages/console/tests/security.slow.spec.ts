import { expect } from 'chai'
import { Context } from 'cordis'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as Console from '@cordis-subagents/console'
import { bearer, call, consoleHost } from './helpers.js'

describe('console: the entry, config checks and the guards', function () {
  this.timeout(20_000)

  it('the entry is what the loader expects: a Service class as default, injecting agents and subagents', () => {
    expect(Console.default).to.equal(Console.SubagentConsole)
    expect(Console.SubagentConsole.inject).to.deep.equal({ agents: { required: true }, subagents: { required: true } })
    expect(typeof Console.Config).to.equal('function')
  })

  for (const [what, config, pattern] of [
    ['a non-loopback bind without allowRemote', { host: '0.0.0.0' }, /not loopback/],
    ['a short token', { token: 'short' }, /token must be 16-512/],
    ['a port out of range', { port: 70000 }, /port/],
  ] as const) {
    it(`${what} fails the plugin at load with INVALID_CONFIG`, async () => {
      const ctx = new Context()
      ctx.plugin(AgentRuntime)
      ctx.plugin(SubagentService)
      const errors: unknown[] = []
      ctx.on('internal/error', (error) => { errors.push(error) })
      await ctx.start()
      ctx.plugin(Console.SubagentConsole, config as never)
      await ctx.lifecycle.flush()
      expect(ctx.get('subagentConsole')).to.equal(undefined)
      await ctx.stop()
      expect(() => new Console.SubagentConsole(new Context(), config as never)).to.throw(pattern).with.property('code', 'INVALID_CONFIG')
    })
  }

  describe('guards', () => {
    let host: Awaited<ReturnType<typeof consoleHost>>
    before(async () => { host = await consoleHost(() => ({ text: 'hi' })) })
    after(() => host.stop())

    const code = (body: string) => JSON.parse(body).error.code

    it('serves on 127.0.0.1 with the token in the fragment of url; the static page needs no token and carries a strict CSP', async () => {
      expect(host.view.url).to.equal(`http://127.0.0.1:${host.view.port}/#token=${host.view.token}`)
      const page = await call(host.view.port, '/')
      expect(page.status).to.equal(200)
      expect(page.body).to.include('<script src="/app.js"')
      expect(page.headers['content-security-policy']).to.include("default-src 'none'")
      expect(page.headers['content-security-policy']).to.include("frame-ancestors 'none'")
      expect((await call(host.view.port, '/app.js')).status).to.equal(200)
    })

    it('the API without a token, or with a wrong one, is UNAUTHENTICATED (401)', async () => {
      for (const headers of [{}, bearer('x'.repeat(32)), { authorization: host.view.token }, bearer(`${host.view.token}x`)]) {
        const reply = await call(host.view.port, '/api/snapshot', { headers })
        expect(reply.status).to.equal(401)
        expect(code(reply.body)).to.equal('UNAUTHENTICATED')
      }
      expect((await call(host.view.port, '/api/snapshot', { headers: bearer(host.view.token) })).status).to.equal(200)
    })

    it('a foreign Host (DNS rebinding) is FORBIDDEN_HOST even with the token and for the page; a foreign Origin is FORBIDDEN_ORIGIN', async () => {
      for (const path of ['/', '/api/snapshot']) {
        const reply = await call(host.view.port, path, { headers: { ...bearer(host.view.token), host: `evil.example:${host.view.port}` } })
        expect(reply.status).to.equal(403)
        expect(code(reply.body)).to.equal('FORBIDDEN_HOST')
      }
      const origin = await call(host.view.port, '/api/snapshot', { headers: { ...bearer(host.view.token), origin: 'http://evil.example' } })
      expect(code(origin.body)).to.equal('FORBIDDEN_ORIGIN')
      const own = await call(host.view.port, '/api/snapshot', { headers: { ...bearer(host.view.token), origin: `http://localhost:${host.view.port}`, host: `localhost:${host.view.port}` } })
      expect(own.status).to.equal(200)
      expect(host.view.refusals).to.include({ FORBIDDEN_HOST: 2, FORBIDDEN_ORIGIN: 1 })
    })

    it('unknown paths are NOT_FOUND, wrong methods METHOD_NOT_ALLOWED, a large body BODY_TOO_LARGE', async () => {
      expect(code((await call(host.view.port, '/etc/passwd')).body)).to.equal('NOT_FOUND')
      expect(code((await call(host.view.port, '/api/runs/x/cancel', { headers: bearer(host.view.token) })).body)).to.equal('METHOD_NOT_ALLOWED')
      const big = await call(host.view.port, '/api/runs/x/send', { method: 'POST', headers: bearer(host.view.token), body: 'x'.repeat(70_000) })
      expect(code(big.body)).to.equal('BODY_TOO_LARGE')
    })
  })
})
