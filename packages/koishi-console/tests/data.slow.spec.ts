// The page's data and requests through a real Koishi project (`koishi start`, tests/koishi-project.ts)
// over the console's own WebSocket, as its browser client speaks it: the trees as the console's data
// services, a transcript, cancel and answer as listeners, the standalone console's bounds, and every
// string cleaned before it reaches the console.
import { expect } from 'chai'
import type { NodeView, TranscriptPage } from '@cordis-subagents/console'
import { eventually } from '@cordis-subagents/test-support'
import type { NodeMap, TreeMap } from '@cordis-subagents/koishi-console'
import { ConsoleClient } from './console-client.js'
import { type Project, startProject } from './koishi-project.js'

interface Ended { scenario: string; stopReason?: string; text?: string; error?: string }

describe('koishi-console: data and requests over the console WebSocket of `koishi start`', function () {
  this.timeout(120_000)
  let project: Project | undefined
  let client: ConsoleClient | undefined

  before(async () => {
    project = await startProject({ config: { maxNodesPerTree: 2, maxEntryChars: 100 } })
  })
  afterEach(() => {
    client?.close()
    client = undefined
  })
  after(async () => {
    const run = await project?.stop()
    expect(`${run?.stdout}\n${run?.stderr}`, 'no error logged').to.not.match(/\[E\]|cannot resolve plugin/)
  })

  const open = async () => {
    client = await ConsoleClient.open(project!.ws)
    await eventually(() => client!.data.subagentNodes, 'the console sent the trees')
    return client
  }
  const nodes = () => Object.values((client!.data.subagentNodes ?? {}) as NodeMap)
  const trees = () => Object.values((client!.data.subagentTrees ?? {}) as TreeMap)
  const node = (label: string) => nodes().find((view) => view.label === label)
  /** The node labelled `label` once `holds` is true of it. */
  const where = (label: string, holds: (view: NodeView) => unknown) => {
    const view = node(label)
    return view && holds(view) ? view : undefined
  }
  const ended = async (scenario: string) => {
    const result = await eventually(async () => ((await client!.call('fixture/results')).value as Ended[]).find((run) => run.scenario === scenario), `${scenario} ended`)
    return result
  }
  const code = (reply: { value?: unknown }) => (reply.value as { error?: { code: string } }).error?.code

  it('shows a running tree, opens a transcript, cancels a held child; the parent goes on', async () => {
    await open()
    await client!.call('fixture/start', 'held')
    const held = await eventually(() => where('held child', (view) => view.lastProgress === 'lookup returned'), 'the held child shown running')
    expect(held).to.include({ transport: 'spawn', state: 'running', depth: 1 })
    expect(held.can).to.deep.equal({ cancel: true, send: true, answer: false })
    expect(node('held')).to.include({ transport: 'root', state: 'running' })
    expect(trees().find((tree) => tree.treeId === held.treeId)?.live).to.equal(true)

    const page = ((await client!.call('subagents/transcript', held.runId, 0, 50)).value as { ok: TranscriptPage }).ok
    expect(page.source).to.equal('agent')
    expect(page.entries.map((entry) => entry.kind)).to.deep.equal(['user', 'tool-call', 'tool-result'])
    expect(page.entries[2]).to.include({ tool: 'lookup', text: 'found hold' })
    expect(code(await client!.call('subagents/transcript', held.runId, 0, 101))).to.equal('INVALID_REQUEST')
    expect(code(await client!.call('subagents/transcript', 'no-such-run'))).to.equal('NOT_FOUND')
    expect(code(await client!.call('subagents/cancel', '../etc'))).to.equal('INVALID_REQUEST')

    expect((await client!.call('subagents/cancel', held.runId)).value).to.deep.equal({ ok: true })
    expect(await ended('held')).to.include({ stopReason: 'completed' })
    const cancelled = await eventually(() => where('held child', (view) => view.state === 'ended'), 'the child shown ended')
    expect(cancelled.stopReason).to.equal('aborted')
    expect(cancelled.diagnostic).to.match(/^cancelled from the console/)
    expect(cancelled.can).to.deep.equal({ cancel: false, send: false, answer: false })
    expect(code(await client!.call('subagents/cancel', held.runId))).to.equal('NOT_RUNNING')
    expect(code(await client!.call('subagents/cancel', node('held')!.runId))).to.equal('NOT_CANCELLABLE')
  })

  it('answers a parked child: the run resumes, the root goes on with the answer; a second answer is ALREADY_ANSWERED', async () => {
    await open()
    await client!.call('fixture/start', 'ask')
    const parked = await eventually(() => where('painter', (view) => view.can.answer), 'the question shown')
    expect(parked.question).to.include({ text: 'Which colour?' })
    expect(code(await client!.call('subagents/answer', parked.runId, ''))).to.equal('INVALID_REQUEST')
    expect((await client!.call('subagents/answer', parked.runId, 'blue')).value).to.deep.equal({ ok: true })
    expect(code(await client!.call('subagents/answer', parked.runId, 'red'))).to.equal('ALREADY_ANSWERED')
    const working = await eventually(() => where('painter', (view) => !view.question), 'the question gone from the page')
    expect(working.state).to.equal('running')
    await client!.call('fixture/gate')
    const root = await ended('ask')
    expect(root.stopReason).to.equal('completed')
    expect(root.text).to.match(/^Root: painted blue /)
    const painter = await eventually(() => where('painter', (view) => view.state === 'ended'), 'the painter shown ended')
    expect(painter.stopReason).to.equal('completed')
    expect(nodes().filter((view) => view.treeId === painter.treeId).map((view) => view.label)).to.deep.equal(['ask', 'painter'])
  })

  it('keeps the standalone bounds (nodes per tree, characters per text) and cleans every string', async () => {
    await open()
    await client!.call('fixture/start', 'fanout')
    expect(await ended('fanout')).to.include({ stopReason: 'completed' })
    const root = await eventually(() => where('fanout', (view) => view.state === 'ended'), 'the fan-out shown ended')
    const tree = await eventually(() => trees().find((view) => view.treeId === root.treeId && view.droppedNodes === 2), 'two children counted as dropped')
    expect(tree.live).to.equal(false)
    const kept = nodes().filter((view) => view.treeId === root.treeId && view.depth === 1) as NodeView[]
    expect(kept).to.have.length(1)
    const output = kept[0].output!
    expect(output).to.match(/^Part \d of 3\. done <script>window.__pwned = 1<\/script>/)
    expect(output).to.match(/ …\[\d+ more characters\]$/)
    expect(output.length).to.be.lessThan(140)
  })
})
