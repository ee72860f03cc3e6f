import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { drawRoute, isShared, reentries, reentryCount, type Road, type RoadMode } from '../bench/profile/road-probe.js'
import { describeResult, runCommand } from '../scripts/support/run-command.js'
import { ROOT } from './helpers.js'

// The route of one delegation drawn in packages/subagents-service/README.md ("The road of one
// delegation") is the route the code runs: the files of ours with a function that ran during one
// delegation (traced with the inspector in a process of its own, bench/profile/road.ts --json: a test worker's
// heap, grown by the specs before, makes each breakpoint slow to set) are exactly the
// files the README's tables list, shared helpers aside; and from the tool call to the tool result the
// road enters few files through a second door (a second file calling into a file already entered).

const README = 'packages/subagents-service/README.md'

/** The route drawn between `<!-- road:route -->` markers (a text block). */
function drawn(): string {
  const text = readFileSync(join(ROOT, README), 'utf8')
  const match = /<!-- road:route -->\n```text\n([\s\S]*?)\n```\n<!-- \/road:route -->/.exec(text)
  if (!match) throw new Error(`${README} has no <!-- road:route --> text block`)
  return match[1]
}

/** The `package/path` of every file a README table between `<!-- road:name -->` markers lists (first code span of each row). */
function documented(name: string): string[] {
  const text = readFileSync(join(ROOT, README), 'utf8')
  const open = `<!-- road:${name} -->`
  const start = text.indexOf(open)
  const end = text.indexOf(`<!-- /road:${name} -->`)
  if (start < 0 || end < start) throw new Error(`${README} has no ${open} … <!-- /road:${name} --> table`)
  return [...text.slice(start, end).matchAll(/^\|[^`\n]*`packages\/([^/`]+)\/src\/([^`]+)\.ts`/gm)].map(([, pkg, file]) => `${pkg}/${file}`)
}

/** One delegation of `mode` traced in a fresh process. */
async function traceRoad(mode: RoadMode): Promise<Road> {
  const args = ['--import', 'tsx', '--conditions=cordis-subagents-source', 'bench/profile/road.ts', mode, '--json']
  const result = await runCommand(process.execPath, args, { cwd: ROOT, timeoutMs: 240_000, maxOutput: 1024 * 1024 })
  if (result.code !== 0) throw new Error(`${describeResult(`road.ts ${mode}`, result)}`)
  return JSON.parse(result.stdout) as Road
}

const ours = (road: Road) => road.files.map((entry) => entry.file).filter((file) => !isShared(file))

describe('the road of one delegation, as the subagents-service README draws it', function () {
  this.timeout(600_000)
  let sync: Road

  before(async () => {
    sync = await traceRoad('sync')
  })

  it('a synchronous spawn delegation runs exactly the files the route lists, each listed once', () => {
    const route = documented('sync')
    expect(new Set(route).size, 'a file listed twice').to.equal(route.length)
    // 27 before issue 41's second pass; 17 as V8's call counts saw it, which missed small functions already
    // optimised into their callers (the registry's lookups, the tool's execute, its input check): 20 traced;
    // 13 since the tool's part is 2 files and tools' 1, the service's 4 (was 7) and the agent's 5 (was 6); 12 since
    // `ctx.subagents.begin` is admission's own (the service's 3: a plain start never enters service.ts); 11 since the
    // tool's result is part of its call (a failure's and a cut output's words are off the road, in result.ts); 12 since the
    // runtime's seam (what a turn calls back into) is a file of its own, so a turn no longer re-enters create.ts.
    expect(route.length).to.be.at.most(12)
    expect(ours(sync).sort()).to.deep.equal([...route].sort())
  })

  it('from the tool call to the tool result, few files are entered through a second door', () => {
    // The trace itself: the tool's call enters admission, the run enters the provider, the child's turn the model.
    const doors = new Set(sync.entries.map(({ from, to }) => `${from} → ${to}`))
    for (const door of ['subagent-tool/call → subagents-service/admission/admission', 'subagents-service/run/delegation → provider-spawn/in-process-provider',
      'provider-spawn/in-process-provider → agent/create']) expect([...doors]).to.include(door)
    const again = reentries(sync.entries)
    // 29 when first traced; 27 since the result book listens to the run's end itself (not through the service); 26 since
    // the tool's result reads the outcome's status instead of working it out again in the run's provider boundary.
    // 11 since the service is entered once (the run and the account no longer call it back), the tool's result reads its
    // view's cap as a field, and the agent's step is part of its turn (no step ↔ turn back and forth). 10 since the run
    // skips charging an in-process child's reported totals (its budget says so in a field): the run no longer calls the budget.
    // 9 since the runtime's seam left create.ts (seam.ts): the turn calls back into the seam, not the file that built its agent.
    expect(reentryCount(sync.entries), JSON.stringify(Object.fromEntries(again), null, 1)).to.be.at.most(9)
  })

  it('the README draws the route the trace takes', () => {
    expect(drawRoute(sync.entries)).to.equal(drawn())
  })

  it('a background delegation runs the same road plus exactly the files listed for it', async () => {
    const added = documented('background')
    expect(added.length).to.be.at.most(3)
    expect(ours(await traceRoad('background')).sort()).to.deep.equal([...documented('sync'), ...added].sort())
  })
})
