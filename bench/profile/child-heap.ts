/**
 * What one live (waiting) child holds, for a profile, not part of `npm run bench`: section 2's fan-out
 * of N children (default 1000), one rep after a warm-up, with a heap snapshot before the run and one
 * while all N children wait in their model call. Prints the retained heap per child (as section 2
 * measures it) and the snapshots' difference grouped by node type and constructor/closure name, per child.
 *
 *   node --expose-gc --import tsx --conditions=cordis-subagents-source bench/profile/child-heap.ts [n] [rows]
 */
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeHeapSnapshot } from 'node:v8'
import { fmt } from '../lib.js'
import { fanout } from '../scenarios/fanout.js'

const n = Number(process.argv[2] ?? 1000)
const top = Number(process.argv[3] ?? 40)
let warm = true
const files: { before?: string; live?: string } = {}
const dir = tmpdir()
const [row] = await fanout({
  sizes: [n],
  reps: 1,
  onBaseline: () => { if (!warm) files.before = writeHeapSnapshot(join(dir, `child-heap-before-${process.pid}.heapsnapshot`)) },
  onLive: () => {
    if (warm) { warm = false; return }
    files.live = writeHeapSnapshot(join(dir, `child-heap-live-${process.pid}.heapsnapshot`))
  },
})

interface Snapshot { snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }; nodes: number[]; strings: string[] }

/** Self size by "type name", summed over a snapshot's nodes. */
function group(file: string): Map<string, { size: number; count: number }> {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot
  const fields = snap.snapshot.meta.node_fields
  const width = fields.length
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f))
  const types = snap.snapshot.meta.node_types[0]
  const out = new Map<string, { size: number; count: number }>()
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]]
    let name = snap.strings[snap.nodes[i + nameAt]]
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(strings)'
    else if (type === 'number') name = '(numbers)'
    const key = `${type} ${name.slice(0, 80)}`
    const entry = out.get(key) ?? { size: 0, count: 0 }
    entry.size += snap.nodes[i + sizeAt]
    entry.count++
    out.set(key, entry)
  }
  return out
}

const before = group(files.before!)
const live = group(files.live!)
if (process.env.CHILD_HEAP_KEEP) console.log(`snapshots kept: ${files.before} ${files.live}`)
else for (const file of [files.before!, files.live!]) rmSync(file)
const diff = [...live].map(([key, v]) => {
  const b = before.get(key) ?? { size: 0, count: 0 }
  return { key, bytes: (v.size - b.size) / n, count: (v.count - b.count) / n }
}).sort((a, b) => b.bytes - a.bytes)
const total = diff.reduce((sum, d) => sum + d.bytes, 0)
console.log(`${n} live children: retained heap per child ${fmt(row.retainedPerChildKiB[0], 2)} KiB (heapUsed); snapshot difference ${fmt(total / 1024, 2)} KiB per child`)
console.log('bytes/child  objects/child  type name')
for (const d of diff.slice(0, top)) console.log(`${d.bytes.toFixed(0).padStart(11)}  ${d.count.toFixed(2).padStart(13)}  ${d.key}`)
