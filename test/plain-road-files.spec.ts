import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { isShared, roadFiles } from '../bench/profile/road-probe.js'
import { ROOT } from './helpers.js'

// The route of one delegation drawn in packages/subagents-service/README.md ("The road of one
// delegation") is the route the code runs: the files of ours with a function that ran during one
// delegation (V8's call counts, in this process: bench/profile/road-probe.ts) are exactly the files
// the README's tables list, shared helpers aside.

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

const ran = async (mode: 'sync' | 'background') => (await roadFiles(mode, 5)).map((entry) => entry.file).filter((file) => !isShared(file))

describe('the road of one delegation, as the subagents-service README draws it', function () {
  this.timeout(30_000)

  it('a synchronous spawn delegation runs exactly the files the route lists, each listed once', async () => {
    const route = documented('sync')
    expect(new Set(route).size, 'a file listed twice').to.equal(route.length)
    // 27 before issue 41's second pass grouped the road's code by step and moved what a plain delegation never runs
    // into files of its own (the agent 11 → 6 files, subagents-service 11 → 7, provider-spawn 2 → 1).
    expect(route.length).to.be.at.most(17)
    expect((await ran('sync')).sort()).to.deep.equal([...route].sort())
  })

  it('a background delegation runs the same road plus exactly the files listed for it', async () => {
    const added = documented('background')
    expect(added.length).to.be.at.most(3)
    expect((await ran('background')).sort()).to.deep.equal([...documented('sync'), ...added].sort())
  })
})
