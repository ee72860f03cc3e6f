import type { Context } from 'koishi'
import type { DataService } from '@koishijs/plugin-console'
import type { Context as CordisContext } from 'cordis'
import { nodeView, type NodeView, observeDelegations, pageJson, TreeStore, treeView, type TreeView, type ViewHost } from '@cordis-subagents/console'
import type { Config } from './config.js'

/** Every node the page shows, by run id (the console's `subagentNodes` data). */
export type NodeMap = Record<string, NodeView>
/** Every tree, by tree id (the console's `subagentTrees` data). */
export type TreeMap = Record<string, TreeView>

declare module '@koishijs/plugin-console' {
  namespace Console {
    interface Services {
      subagentNodes: DataService<NodeMap>
      subagentTrees: DataService<TreeMap>
    }
  }
}

/** A value as the page gets it: every string cleaned by `pageJson` (no escapes, controls, bidi or hiding characters). */
export function clean<T>(value: T): T {
  return JSON.parse(pageJson(value)) as T
}

/**
 * The delegation trees of this process, kept by the standalone console's store (same bounds),
 * and sent to Koishi's console: changes are coalesced per node and patched into the page's data
 * every `flushInterval` ms; a dropped tree (maxTrees) sends the page fresh data instead.
 */
export class DelegationView {
  readonly store: TreeStore
  readonly host: ViewHost & { maxEntryChars: number }
  private readonly dirty = new Set<string>()
  private evicted = false
  private timer?: () => void
  private readonly flushInterval: number

  constructor(private readonly ctx: Context, config: Config) {
    this.flushInterval = config.flushInterval
    this.store = new TreeStore(config, (runId) => this.changed(runId), () => this.removed())
    this.host = { store: this.store, subagents: ctx.subagents, transports: config.transports, maxEntryChars: config.maxEntryChars }
    // Koishi's Context is cordis' own with Koishi's services typed on it (a different minato typing); the same object.
    observeDelegations(ctx as unknown as CordisContext, this.store)
    ctx.on('dispose', () => this.timer?.())
  }

  nodes(): NodeMap {
    const nodes: NodeMap = {}
    for (const tree of this.store.trees.values()) {
      for (const runId of tree.runIds) {
        const node = this.store.nodes.get(runId)
        if (node) nodes[runId] = nodeView(this.host, node)
      }
    }
    return clean(nodes)
  }

  trees(): TreeMap {
    const trees: TreeMap = {}
    for (const tree of this.store.trees.values()) trees[tree.treeId] = treeView(this.host, tree)
    return clean(trees)
  }

  private changed(runId: string): void {
    if (!this.listening()) return
    this.dirty.add(runId)
    this.schedule()
  }

  private removed(): void {
    if (!this.listening()) return
    this.evicted = true
    this.schedule()
  }

  private schedule(): void {
    this.timer ??= this.ctx.setTimeout(() => this.flush(), this.flushInterval)
  }

  /** Whether any console page is connected (with none, changes are not collected: a page reads everything when it connects). */
  private listening(): boolean {
    const clients = this.ctx.get('console')?.clients
    return clients !== undefined && Object.keys(clients).length > 0
  }

  private flush(): void {
    this.timer = undefined
    const console = this.ctx.get('console')
    const dirty = [...this.dirty]
    this.dirty.clear()
    if (!console || !this.listening()) {
      this.evicted = false
      return
    }
    if (this.evicted) {
      this.evicted = false
      console.refresh('subagentTrees')
      console.refresh('subagentNodes')
      return
    }
    if (!dirty.length) return
    const nodes: NodeMap = {}
    const trees: TreeMap = {}
    for (const runId of dirty) {
      const node = this.store.nodes.get(runId)
      if (!node) continue
      nodes[runId] = nodeView(this.host, node)
      const tree = this.store.trees.get(node.treeId)
      if (tree && !trees[tree.treeId]) trees[tree.treeId] = treeView(this.host, tree)
    }
    console.patch('subagentTrees', clean(trees))
    console.patch('subagentNodes', clean(nodes))
  }
}
