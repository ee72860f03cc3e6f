// Issue 39.13: text from models, agents and remotes (labels, progress, outputs, questions, tool
// results in a transcript) reaches the live view's JSON, its event stream and so its page without
// terminal escapes, C1 controls, bidi controls or hidden characters. A real host over HTTP.
import { connect } from 'node:net'
import { expect } from 'chai'
import type { GenerateRequest, ScriptedResponse } from '@cordis-subagents/agent'
import { FakeProvider } from '@cordis-subagents/subagents-service/testing'
import type { NodeView } from '@cordis-subagents/console'
import { bearer, call, consoleHost, eventually } from './helpers.js'

const H = (word: string) => `${word}\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\u2066\u2067\u2068\u2069\u0085\u200b\r`
/** What must never come out: C0 but tab and newline, DEL, C1, bidi controls, zero-width space. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069]/

/** Every string in a parsed JSON value. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value)
  else if (Array.isArray(value)) for (const item of value) strings(item, out)
  else if (value && typeof value === 'object') for (const item of Object.values(value)) strings(item, out)
  return out
}

function expectClean(value: unknown) {
  const all = strings(value)
  expect(all.length).to.be.above(0)
  for (const text of all) expect(CONTROL.test(text), JSON.stringify(text)).to.equal(false)
}

const hasResults = (request: GenerateRequest) => request.messages.at(-1)?.role === 'tool'
const root = (request: GenerateRequest): ScriptedResponse => hasResults(request)
  ? { text: H('all done') }
  : { text: 'delegating', toolCalls: [{ name: 'subagent', input: { description: H('first part'), prompt: `child: ${H('one')}` } }] }

describe('console: text from peers on the page (issue 39.13)', function () {
  this.timeout(20_000)
  let host: Awaited<ReturnType<typeof consoleHost>>
  beforeEach(async () => { host = await consoleHost(root) })
  afterEach(() => host.stop())

  const get = async (path: string) => JSON.parse((await call(host.view.port, path, { headers: bearer(host.view.token) })).body)

  it('the snapshot and a child\'s transcript (its prompt, tool call, tool result, answer) come out clean', async () => {
    await host.ctx.agents.create({ label: H('main') }).run(H('go'))
    const { nodes } = await get('/api/snapshot') as { nodes: NodeView[] }
    expectClean(nodes)
    expect(nodes.map((node) => node.label)).to.deep.equal(['main', 'first part'])
    expect(nodes[1].output).to.equal('answer to child: one')
    const page = await get(`/api/runs/${nodes[1].runId}/transcript?offset=0&limit=10`)
    expectClean(page)
    expect(page.entries.map((entry: { text: string }) => entry.text)).to.include('found child: one')
  })

  it('a remote child\'s progress, label and question reach the event stream clean', async () => {
    const fake = new FakeProvider('fake')
    host.ctx.subagents.register(fake)
    const parent = host.ctx.agents.create()
    const run = await host.ctx.subagents.delegate('fake', { prompt: 'p', label: H('remote'), parent, signal: new AbortController().signal })
    fake.runs[0]!.update('text', H('progress'))
    fake.runs[0]!.ask(H('Which file'))
    await eventually(async () => (await get('/api/snapshot')).nodes.some((node: NodeView) => node.question), 'the question is shown')
    const socket = connect(host.view.port, '127.0.0.1')
    try {
      await new Promise((resolve) => socket.once('connect', resolve))
      socket.write(`GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${host.view.port}\r\nAuthorization: Bearer ${host.view.token}\r\n\r\n`)
      let received = ''
      socket.setEncoding('utf8').on('data', (chunk: string) => { received += chunk })
      await eventually(() => /event: snapshot\ndata: .*\n\n/.test(received), 'the first snapshot arrived')
      const data = JSON.parse(/event: snapshot\ndata: (.*)\n\n/.exec(received)![1]!) as { nodes: NodeView[] }
      expectClean(data)
      const node = data.nodes.find((n) => n.provider === 'fake')!
      expect(node).to.deep.include({ label: 'remote', lastProgress: 'progress' })
      expect(node.question).to.deep.include({ text: 'Which file' })
    } finally {
      socket.destroy()
      run.cancel('done')
      await run.dispose()
      await parent.dispose()
    }
  })
})
