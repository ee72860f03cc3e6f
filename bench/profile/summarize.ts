/**
 * Self time of a `.cpuprofile` by package, not part of `npm run bench`. Native frames (GC, builtins)
 * count for the package of the nearest JavaScript frame above them, so what a package makes V8 do
 * is its own. With `--by-caller <package>` it also splits that package's time by the nearest frame
 * of ours (packages/*) above it: which of our calls make, say, cordis work.
 *
 *   node --import tsx bench/profile/summarize.ts /tmp/prof/CPU.….cpuprofile [--by-caller @cordisjs/core] [--per <n>]
 *
 * `--per n` divides every figure by n (µs per call, per child, per reload …); otherwise shares of the total.
 */
import { readFileSync } from 'node:fs'

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

const [file, ...rest] = process.argv.slice(2)
if (!file) throw new Error('usage: summarize.ts <file.cpuprofile> [--by-caller <package>] [--per <n>]')
const option = (name: string) => { const at = rest.indexOf(name); return at < 0 ? undefined : rest[at + 1] }
const byCaller = option('--by-caller')
const per = Number(option('--per') ?? NaN)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

/** A frame's package: a dependency's name, `ours:<package>`, `node:` internals, or the file; '' for native frames. */
function packageOf(url: string): string {
  if (!url) return ''
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (dependency) return dependency[1]
  const ours = /\/packages\/([^/]+)\//.exec(url)
  if (ours) return `ours:${ours[1]}`
  return url.startsWith('node:') || !url.includes('/') ? 'node (internal)' : url.slice(url.lastIndexOf('/') + 1)
}

/** The package of a sample's frame, or of the nearest JavaScript frame above a native one. */
function owner(id: number): string {
  const { callFrame } = nodes.get(id)!
  if (callFrame.url) return packageOf(callFrame.url)
  if (['(idle)', '(program)', '(garbage collector)', '(root)'].includes(callFrame.functionName)) return callFrame.functionName
  for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
    const url = nodes.get(at)!.callFrame.url
    if (url) return packageOf(url)
  }
  return '(native)'
}

const self = new Map<number, number>()
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + profile.timeDeltas[i]))
const byPackage = new Map<string, number>()
const callers = new Map<string, number>()
let total = 0
let busy = 0
for (const [id, us] of self) {
  const name = owner(id)
  total += us
  if (name !== '(idle)') busy += us
  byPackage.set(name, (byPackage.get(name) ?? 0) + us)
  if (byCaller && name === byCaller) {
    let caller = '(none of ours)'
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at)!.callFrame
      if (packageOf(frame.url).startsWith('ours:')) {
        caller = `${packageOf(frame.url)} ${frame.functionName || '(anonymous)'} (${frame.url.slice(frame.url.lastIndexOf('/') + 1)})`
        break
      }
    }
    callers.set(caller, (callers.get(caller) ?? 0) + us)
  }
}
const show = (us: number) => (Number.isNaN(per) ? `${((100 * us) / busy).toFixed(1)} %` : `${(us / per).toFixed(1)} µs`)
console.log(`${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms not idle; shares are of the time not idle`)
for (const [name, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 20)) if (name !== '(idle)') console.log(`${show(us).padStart(10)}  ${name}`)
if (byCaller) {
  console.log(`\n${byCaller} by the nearest caller of ours:`)
  for (const [name, us] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`${show(us).padStart(10)}  ${name}`)
}
