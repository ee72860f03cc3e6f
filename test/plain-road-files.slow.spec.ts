import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { isShared, reentries, reentryCount, type Road, traceRoad } from '../bench/profile/road-probe.js'
import { ROOT } from './helpers.js'

// The route of one delegation drawn in packages/subagents-service/README.md ("The road of one
// delegation") is the route the code runs: the files of ours with a function that ran during one
// delegation (traced with the inspector, in this process: bench/profile/road-probe.ts) are exactly the
// files the README's tables list, shared helpers aside; and from the tool call to the tool result the
// road enters few files through a second door (a second file calling into a file already entered).

const README = 'packages/subagents-service/README.md'

/** The `package/path` of every file a README table between `<!-- road:name -->` markers lists (first code span of each row). */
function documented(name: string): string[] {
  const text = readFileSync(join(ROOT, README), 'utf8')
  const open = `<!-- road:${name} -->`
  const start = text.indexOf(open)
  const end = text.indexOf(`<!-- /road:${name} -->`)
  if (start < 0 || end < start) throw new Error(`${README} has no ${open} … <!-- /road:${name} --> table`)
  return [...text.slice(start, end).matchAll(/^\|[^`\n]*`packages\/([^/`]+)\/src\/([^`]+)\.ts`/gm)].map(([, pkg, file]) => `${pkg}/${file}`)
}

const ours = (road: Road) => road.files.map((entry) => entry.file).filter((file) => !isShared(file))

describe('the road of one delegation, as the subagents-service README draws it', function () {
  this.timeout(120_000)
  let sync: Road

  before(async () => {
    sync = await traceRoad('sync', 5)
  })

  it('a synchronous spawn delegation runs exactly the files the route lists, each listed once', () => {
    const route = documented('sync')
    expect(new Set(route).size, 'a file listed twice').to.equal(route.length)
    // 27 before issue 41's second pass; 17 as V8's call counts saw it, which missed small functions already
    // optimised into their callers (the registry's lookups, the tool's execute, its input check): 20 traced.
    expect(route.length).to.be.at.most(20)
    expect(ours(sync).sort()).to.deep.equal([...route].sort())
  })

  it('from the tool call to the tool result, few files are entered through a second door', () => {
    // The trace itself: the tool's call enters the service, the run enters the provider, the child's turn the model.
    const doors = new Set(sync.entries.map(({ from, to }) => `${from} → ${to}`))
    for (const door of ['subagent-tool/call → subagents-service/service', 'subagents-service/run/delegation → provider-spawn/in-process-provider',
      'provider-spawn/in-process-provider → agent/create']) expect([...doors]).to.include(door)
    const again = reentries(sync.entries)
    expect(reentryCount(sync.entries), JSON.stringify(Object.fromEntries(again), null, 1)).to.be.at.most(29)
  })

  it('a background delegation runs the same road plus exactly the files listed for it', async () => {
    const added = documented('background')
    expect(added.length).to.be.at.most(3)
    expect(ours(await traceRoad('background', 5)).sort()).to.deep.equal([...documented('sync'), ...added].sort())
  })
})
