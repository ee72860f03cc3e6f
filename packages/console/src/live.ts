import type { ServerResponse } from 'node:http'
import { nodeView, type NodeView, treeView, type TreeView, type ViewHost } from './node-view.js'
import { pageJson } from './page-json.js'

/** An SSE comment every this many ms keeps idle connections (and proxies) open. */
const KEEPALIVE_MS = 15_000

export interface Snapshot {
  now: number
  trees: TreeView[]
  nodes: NodeView[]
}

interface Patch {
  now: number
  trees: TreeView[]
  nodes: NodeView[]
  evicted: string[]
}

interface Viewer {
  res: ServerResponse
  /** Updates were dropped for it: it gets a snapshot once its buffer drained. */
  behind: boolean
}

/** Every tree and node as the page gets them (oldest tree first). */
export function snapshot(host: ViewHost): Snapshot {
  const trees = [...host.store.trees.values()]
  const nodes: NodeView[] = []
  for (const tree of trees) {
    for (const runId of tree.runIds) {
      const node = host.store.nodes.get(runId)
      if (node) nodes.push(nodeView(host, node))
    }
  }
  return { now: Date.now(), trees: trees.map((tree) => treeView(host, tree)), nodes }
}

/**
 * The live pages. Changes are coalesced per node and sent every `flushInterval` ms, so the host
 * does O(changed nodes) per tick whatever the update rate. A page whose socket holds more than
 * `maxBuffer` bytes unsent gets nothing more (the host never waits for it) until it drains, and
 * then one fresh snapshot instead of what it missed.
 */
export class LiveHub {
  private readonly viewers = new Set<Viewer>()
  private readonly dirty = new Set<string>()
  private readonly evicted = new Set<string>()
  private timer?: NodeJS.Timeout
  private readonly keepalive: NodeJS.Timeout
  /** Updates dropped for slow pages so far (for tests and the README's claim). */
  dropped = 0

  constructor(private readonly host: ViewHost, private readonly options: { flushInterval: number; maxBuffer: number; maxViewers: number }) {
    this.keepalive = setInterval(() => this.broadcast(': keepalive\n\n'), KEEPALIVE_MS)
    this.keepalive.unref()
  }

  get size(): number {
    return this.viewers.size
  }

  get full(): boolean {
    return this.viewers.size >= this.options.maxViewers
  }

  /** Starts an event stream on `res` with a snapshot. */
  add(res: ServerResponse): void {
    const viewer: Viewer = { res, behind: false }
    this.viewers.add(viewer)
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' })
    this.send(viewer, 'snapshot', snapshot(this.host))
    res.on('drain', () => {
      if (!viewer.behind) return
      viewer.behind = false
      this.send(viewer, 'snapshot', snapshot(this.host))
    })
    res.on('close', () => this.viewers.delete(viewer))
  }

  changed(runId: string): void {
    if (!this.viewers.size) return
    this.dirty.add(runId)
    this.schedule()
  }

  removed(treeId: string): void {
    if (!this.viewers.size) return
    this.evicted.add(treeId)
    this.schedule()
  }

  /** Ends every stream and stops the timers. */
  close(): void {
    clearTimeout(this.timer)
    clearInterval(this.keepalive)
    for (const viewer of this.viewers) viewer.res.end()
    this.viewers.clear()
  }

  private schedule(): void {
    if (this.timer) return
    this.timer = setTimeout(() => this.flush(), this.options.flushInterval)
    this.timer.unref()
  }

  private flush(): void {
    this.timer = undefined
    const { store } = this.host
    const nodes: NodeView[] = []
    const trees = new Map<string, TreeView>()
    for (const runId of this.dirty) {
      const node = store.nodes.get(runId)
      if (!node) continue
      nodes.push(nodeView(this.host, node))
      const tree = store.trees.get(node.treeId)
      if (tree && !trees.has(tree.treeId)) trees.set(tree.treeId, treeView(this.host, tree))
    }
    const patch: Patch = { now: Date.now(), trees: [...trees.values()], nodes, evicted: [...this.evicted] }
    this.dirty.clear()
    this.evicted.clear()
    for (const viewer of this.viewers) this.send(viewer, 'patch', patch)
  }

  private send(viewer: Viewer, event: string, data: unknown): void {
    if (viewer.behind) {
      this.dropped++
      return
    }
    if (viewer.res.writableLength > this.options.maxBuffer) {
      viewer.behind = true
      this.dropped++
      return
    }
    viewer.res.write(`event: ${event}\ndata: ${pageJson(data)}\n\n`)
  }

  private broadcast(text: string): void {
    for (const viewer of this.viewers) if (!viewer.behind) viewer.res.write(text)
  }
}
