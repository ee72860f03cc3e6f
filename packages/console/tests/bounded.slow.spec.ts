import { connect } from 'node:net'
import { expect } from 'chai'
import { Context } from 'cordis'
import type { Agent, RunResult } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import AgentRuntime from '@cordis-subagents/agent'
import Tools from '@cordis-subagents/tools'
import { FakeProvider } from '@cordis-subagents/subagents-service/testing'
import SubagentConsole from '@cordis-subagents/console'
import { TreeStore } from '../src/tree-store.js'
import { TranscriptRing } from '../src/transcript.js'
import { eventually } from './helpers.js'

const rootAgent = (id: string) => ({ id, depth: 0, label: id }) as unknown as Agent
const result = { stopReason: 'completed', text: 'ok', steps: 1, toolCalls: 0, usage: { inputTokens: 1, outputTokens: 1 } } as unknown as RunResult

describe('console: bounded', function () {
  this.timeout(20_000)

  it('keeps maxTrees trees: the oldest ended tree goes first, a live one stays', () => {
    const evicted: string[] = []
    const limits = { maxTrees: 2, maxNodesPerTree: 3, maxTranscriptEntries: 10, maxEntryChars: 100 }
    const store = new TreeStore(limits, () => {}, (id) => evicted.push(id))
    const [a, b, c] = [rootAgent('a'), rootAgent('b'), rootAgent('c')]
    store.runStart(a, 'first')
    store.runStart(b, 'second')
    store.runEnd(b, result)
    store.runStart(c, 'third')
    expect(evicted).to.deep.equal(['root-2'])
    expect([...store.trees.keys()]).to.deep.equal(['root-1', 'root-3'])
    expect(store.nodes.has('root-2')).to.equal(false)
  })

  it('a tree shows at most maxNodesPerTree nodes and counts the rest', () => {
    const store = new TreeStore({ maxTrees: 2, maxNodesPerTree: 3, maxTranscriptEntries: 10, maxEntryChars: 100 }, () => {}, () => {})
    store.runStart(rootAgent('p'), 'go')
    for (let i = 0; i < 5; i++) store.start({ runId: `r${i}`, provider: 'x', parentId: 'p', depth: 1, startedAt: Date.now() })
    const tree = store.trees.get('root-1')!
    expect(tree.runIds).to.deep.equal(['root-1', 'r0', 'r1'])
    expect(tree.droppedNodes).to.equal(3)
  })

  it('the transcript ring keeps the newest entries, each cut, and pages say what was dropped', () => {
    const ring = new TranscriptRing(3, 10)
    for (let i = 0; i < 5; i++) ring.record({ kind: 'text', text: `entry ${i} ${'x'.repeat(20)}` })
    ring.record({ kind: 'step', step: 9 })
    const page = ring.page(0, 2)
    expect(page).to.deep.include({ source: 'recorded', offset: 2, first: 2, total: 5 })
    expect(page.entries.map((entry) => entry.text)).to.deep.equal(['entry 2 xx …[18 more characters]', 'entry 3 xx …[18 more characters]'])
  })

  it('a page that does not read is dropped, the host goes on, and it gets a fresh snapshot once it reads again', async () => {
    const ctx = new Context()
    ctx.plugin(Tools)
    ctx.plugin(AgentRuntime)
    ctx.plugin(SubagentService)
    ctx.plugin(SubagentConsole, { maxViewerBufferBytes: 4096, flushInterval: 10, maxEntryChars: 4000 })
    await ctx.start()
    const fake = new FakeProvider('fake')
    ctx.subagents.register(fake)
    const view = ctx.subagentConsole
    const socket = connect(view.port, '127.0.0.1')
    try {
      await new Promise((resolve) => socket.once('connect', resolve))
      socket.write(`GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${view.port}\r\nAuthorization: Bearer ${view.token}\r\n\r\n`)
      let received = ''
      socket.on('data', (chunk) => { received += chunk })
      await eventually(() => received.includes('event: snapshot'), 'the first snapshot arrived')
      socket.pause()
      // 8 trees of 8 children: each flush sends 64 nodes (~40 KB), so the socket buffers fill in seconds.
      const parents = Array.from({ length: 8 }, () => ctx.agents.create())
      const runs = []
      for (let i = 0; i < 64; i++) runs.push(await ctx.subagents.delegate('fake', { prompt: 'p', label: `run ${i} ${'z'.repeat(150)}`, parent: parents[i % 8], signal: new AbortController().signal }))
      const text = 'y'.repeat(3000)
      const until = Date.now() + 12_000
      for (let round = 0; Date.now() < until && view.droppedUpdates === 0; round++) {
        for (const run of fake.runs) run.update('text', `${round} ${text}`)
        await new Promise((resolve) => setTimeout(resolve, 11))
      }
      expect(view.droppedUpdates).to.be.greaterThan(0)
      received = ''
      socket.resume()
      await eventually(() => received.includes('event: snapshot'), 'a fresh snapshot after the drain')
      for (const run of fake.runs) run.complete('done')
      for (const run of runs) await run.dispose()
      for (const parent of parents) await parent.dispose()
    } finally {
      socket.destroy()
      await ctx.stop()
    }
  })
})
