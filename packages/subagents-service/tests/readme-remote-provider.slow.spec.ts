/// <reference types="mocha" />
// The README's remote provider (a plain run: the service holds the once-only guards above it), verbatim, run through the
// provider contract suite against a real HTTP server on 127.0.0.1 playing the remote agent.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Context } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import SubagentService, { SubagentError, type SubagentProvider, type SubagentResult } from '@cordis-subagents/subagents-service'
import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { expect } from 'chai'
import { until } from '../../../test/support/async.js'

// ---- verbatim from README.md, "A remote provider, step by step" ----
const remote = {
  name: 'provider-remote',
  inject: ['subagents'],
  apply(ctx: Context, config: { name?: string; url: string }) {
    const provider: SubagentProvider = {
      name: config.name ?? 'remote',
      description: 'A remote agent behind an HTTP endpoint.',
      capabilities: { persona: false, toolFilter: false, depthLimit: false },
      inheritsParentContext: false,
      start: async (request) => {
        if (request.signal.aborted) throw new SubagentError('ABORTED', 'The delegation was aborted before it started.')
        const http = new AbortController()
        const stop = () => http.abort()
        request.signal.addEventListener('abort', stop, { once: true })
        const ask = async (): Promise<SubagentResult> => {
          request.onUpdate?.({ kind: 'status', text: 'sent to the remote agent' })
          try {
            const response = await fetch(config.url, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ task: request.prompt, depth: request.depth }),
              signal: http.signal,
            })
            if (!response.ok) return { stopReason: 'error', output: '', diagnostic: `The remote agent answered HTTP ${response.status}.` }
            const body = await response.json() as { output?: unknown }
            return { stopReason: 'completed', output: String(body.output ?? '') }
          } catch (error) {
            if (http.signal.aborted) return { stopReason: 'aborted', output: '' }
            return { stopReason: 'error', output: '', diagnostic: `The remote agent failed: ${String(error)}` }
          } finally {
            request.signal.removeEventListener('abort', stop)
          }
        }
        // `result` never rejects: every way `ask` ends is a result.
        const result = ask()
        return {
          id: request.runId,
          result,
          cancel: stop,
          // Quiescent means our request is over, not only asked to stop.
          dispose: async () => {
            stop()
            await result
          },
        }
      },
    }
    ctx.subagents.register(provider)
  },
}
// ---- end of the README code ----

/** The remote agent: answers "Say hello." at once and holds any other task until the client goes away. */
async function remoteAgent(): Promise<{ server: Server; url: string; open: () => number }> {
  let open = 0
  const server = createServer((req, res) => {
    open++
    res.on('close', () => { open-- })
    let body = ''
    req.on('data', (chunk) => { body += chunk })
    req.on('end', () => {
      const { task } = JSON.parse(body) as { task: string }
      if (task === 'Say hello.') {
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ output: `hello from the remote agent (${task})` }))
      }
      // Any other task: keep working until the client disconnects.
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { server, url: `http://127.0.0.1:${port}/tasks`, open: () => open }
}

describeProviderContract('README remote provider (HTTP on 127.0.0.1)', async () => {
  const agent = await remoteAgent()
  const ctx = new Context()
  ctx.plugin(SubagentService)
  ctx.plugin(remote, { url: agent.url })
  await ctx.start()
  const provider = ctx.subagents.get('remote')!
  return {
    completing: provider,
    waiting: provider,
    parent: { id: 'parent', depth: 0, cwd: process.cwd() } as unknown as Agent,
    async assertIdle() {
      // The server sees the disconnect a moment after our side let go: a bounded wait, not a timing check.
      await until(() => agent.open() === 0, 'the remote agent saw every request end')
    },
    async teardown() {
      await ctx.stop()
      agent.server.closeAllConnections()
      await new Promise<void>((resolve) => agent.server.close(() => resolve()))
    },
  }
})

describe('README remote provider: the code above is the README\'s', () => {
  it('matches the README block line for line (indentation aside)', async () => {
    const { readFile } = await import('node:fs/promises')
    const block = (text: string) => {
      const from = text.indexOf('const provider: SubagentProvider')
      const to = text.indexOf('ctx.subagents.register(provider)', from)
      return text.slice(from, to).split('\n').map((line) => line.trim()).filter(Boolean)
    }
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const here = await readFile(new URL(import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('### A remote provider, step by step'))
    const expected = block(section)
    expect(expected.length).to.be.greaterThan(20)
    expect(block(here)).to.deep.equal(expected)
  })
})
