// The public surface is pinned: every entry point of every package (package.json "exports",
// ./testing subpaths included) exports exactly the names in test/fixtures/package-exports.json:
// the values an import sees and the type-only names TypeScript sees.
// An intended change: run `npm run exports:pin`, document it in the package's README, commit both.
import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import {
  currentSurface, entryPoints, namesExportedTwice, PIN_FILE, PROGRAM, type Surface, surfaceChanges,
} from '../scripts/support/package-surface.js'

const pinned = () => JSON.parse(readFileSync(PIN_FILE, 'utf8')) as Surface

describe('package surface (the pinned exports of every entry point)', function () {
  // Importing every entry point from src/ compiles them all through tsx, and one TypeScript program reads their types.
  this.timeout(120_000)

  it('every entry point exports exactly the pinned names (npm run exports:pin after an intended change)', async () => {
    const changes = surfaceChanges(pinned(), await currentSurface())
    expect(changes, 'the public surface changed: if intended, run `npm run exports:pin`, document it in the README, commit').to.deep.equal([])
  })

  it('no public name has two doors: each is exported by one entry point (plugin shape aside)', () => {
    expect(namesExportedTwice(pinned()), 'import the name from its home instead of re-exporting it').to.deep.equal([])
  })

  it('finds a name two entry points export, and leaves the plugin shape alone', () => {
    const surface: Surface = {
      a: { values: ['apply', 'Config', 'LimitError', 'name'], types: ['Usage'] },
      b: { values: ['apply', 'Config', 'LimitError', 'name'], types: [] },
      c: { values: [], types: ['Usage'] },
      bin: PROGRAM,
    }
    expect(namesExportedTwice(surface)).to.deep.equal(['LimitError: a, b', 'Usage: a, c'])
  })

  it('covers every package, their ./testing subpaths, and bins without importing them', () => {
    const specifiers = entryPoints().map((point) => point.specifier)
    for (const name of ['agent', 'tools', 'shared', 'subagents-service', 'subagent-tool', 'provider-acp', 'serve-a2a', 'config-watch']) {
      expect(specifiers).to.include(`@cordis-subagents/${name}`)
    }
    expect(specifiers).to.include.members(['@cordis-subagents/provider-acp/testing', '@cordis-subagents/mcp/servers'])
    expect(pinned()['@cordis-subagents/serve-acp/bin']).to.equal(PROGRAM)
    expect(specifiers).to.not.include('@cordis-subagents/agent/package.json')
  })

  it('reports an added name, a removed name, a new type, a new entry point and a gone one', () => {
    const b = { values: ['x'], types: [] }
    const before: Surface = { a: { values: ['apply', 'name'], types: ['Config'] }, b, gone: { values: ['y'], types: [] }, bin: PROGRAM }
    const after: Surface = { a: { values: ['apply', 'helper'], types: ['Config', 'Hidden'] }, b, added: { values: ['z'], types: [] }, bin: PROGRAM }
    expect(surfaceChanges(before, after)).to.deep.equal([
      'a: added helper', 'a: removed name', 'a: added type Hidden', 'gone: the entry point is gone', 'added: a new entry point',
    ])
    expect(surfaceChanges(before, before)).to.deep.equal([])
  })
})
