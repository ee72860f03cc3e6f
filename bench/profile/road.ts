/**
 * The files of ours one delegation calls into, from the parent model's tool call to the tool result
 * (issue 41), traced with the inspector rather than read by hand (road-probe.ts):
 *
 *   node --import tsx --conditions=cordis-subagents-source bench/profile/road.ts [sync|background] [--json]
 *
 * Prints each file with the functions that ran in it, by package, for one delegation after a
 * warm-up (the parent's turn that makes the call included: the child's turn runs the same files);
 * then the calls from file to file between the tool call and the tool result, and the files entered
 * through more than one door (re-entries: a second file calling into a file already entered).
 * `background` runs the tool in background mode (the answer comes back as a message to the parent's
 * inbox) and also names the files it adds to the synchronous road. `--json` prints the trace alone
 * (`Road`: the files and the calls from file to file), for test/plain-road-files.slow.spec.ts.
 */
import { drawRoute, isShared, reentries, reentryCount, type RoadMode, roadFiles, traceRoad } from './road-probe.js'

const mode = (process.argv[2] ?? 'sync') as RoadMode
if (mode !== 'sync' && mode !== 'background') throw new Error(`usage: road.ts [sync|background], not ${mode}`)

const { files, entries } = await traceRoad(mode)
if (process.argv.includes('--json')) {
  console.log(JSON.stringify({ files, entries }))
  process.exit(0)
}
const byPackage = new Map<string, string[]>()
for (const { file, ran } of files) {
  const [pkg, ...rest] = file.split('/')
  const line = `${rest.join('/')} (${ran.slice(0, 6).join(', ')}${ran.length > 6 ? ', …' : ''})`
  byPackage.set(pkg, [...byPackage.get(pkg) ?? [], line])
}
for (const [pkg, list] of [...byPackage].sort()) console.log(`${pkg} (${list.length})\n  ${list.join('\n  ')}`)
const ours = files.filter((entry) => !isShared(entry.file))
console.log(`\n${ours.length} files of ours outside shared (${files.length - ours.length} shared helpers)`)
const doors = [...new Set(entries.map(({ from, to }) => `${from} → ${to}`))]
console.log(`\nFrom the tool call to the tool result: ${entries.length} calls from file to file, ${doors.length} distinct:\n  ${doors.join('\n  ')}`)
console.log(`\nThe route (each file under the file that first called into it; the README draws it):\n${drawRoute(entries)}`)
const again = reentries(entries)
console.log(`\n${reentryCount(entries)} re-entries (a file entered from a second door):`)
for (const [file, from] of again) console.log(`  ${file} ← ${from.join(', ')}`)
if (mode === 'background') {
  const sync = new Set((await roadFiles('sync')).map((entry) => entry.file))
  const added = ours.filter((entry) => !sync.has(entry.file)).map((entry) => entry.file)
  console.log(`${added.length} more than the synchronous road: ${added.join(', ') || 'none'}`)
}
