// The README's package map is generated from the package.json files (scripts/package-map.ts);
// `npm run lint` runs its --check. These check the generator and that the committed README is current.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { descriptionProblems, END, layered, MAX_DESCRIPTION, packageTable, START, withPackageMap } from '../scripts/support/package-map.js'
import {
  caption, captionProblems, faceModules, SHARED_DIR, SHARED_END, SHARED_START, sharedModules, sharedModuleTable, withSharedModules,
} from '../scripts/support/shared-modules.js'
import { type Manifest, ROOT, workspaceManifests } from '../scripts/support/workspace-packages.js'

const manifest = (name: string, dependencies: string[] = [], description = `the ${name} package`): Manifest => ({
  dir: `packages/${name}`, name: `@cordis-subagents/${name}`, description,
  dependencies: Object.fromEntries(dependencies.map((dependency) => [`@cordis-subagents/${dependency}`, '0.1.0'])),
})

describe('README package map', () => {
  it('the committed README holds the map the package.json files generate (npm run docs:map)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const manifests = workspaceManifests()
    expect(descriptionProblems(manifests)).to.deep.equal([])
    expect(withPackageMap(readme, packageTable(manifests)), 'README.md is stale: run `npm run docs:map`').to.equal(readme)
    for (const { name } of manifests) expect(readme).to.include(`[\`${name}\`]`)
  })

  it('orders packages bottom-up and lists what each depends on', () => {
    const order = layered([manifest('tool', ['agent']), manifest('agent', ['shared']), manifest('shared')]).map((entry) => entry.dir)
    expect(order).to.deep.equal(['packages/shared', 'packages/agent', 'packages/tool'])
    expect(packageTable([manifest('shared'), manifest('agent', ['shared'])]).split('\n').slice(2)).to.deep.equal([
      '| [`@cordis-subagents/shared`](packages/shared) | the shared package | — |',
      '| [`@cordis-subagents/agent`](packages/agent) | the agent package | `shared` |',
    ])
    expect(() => layered([manifest('a', ['b']), manifest('b', ['a'])])).to.throw(/cycle: @cordis-subagents\/a → @cordis-subagents\/b → @cordis-subagents\/a/)
  })

  it('replaces only what is between the markers, and a stale map differs', () => {
    const readme = `# title\n${START}\nold table\n${END}\nafter\n`
    expect(withPackageMap(readme, 'new table')).to.equal(`# title\n${START}\nnew table\n${END}\nafter\n`)
    expect(withPackageMap(readme, 'old table')).to.equal(readme)
    expect(() => withPackageMap('# no markers\n', 'table')).to.throw(/exactly one/)
    expect(() => withPackageMap(`${readme}${START}\n`, 'table')).to.throw(/exactly one/)
  })

  it('refuses a missing, multi-line or too long description', () => {
    expect(descriptionProblems([manifest('a', [], ''), manifest('b', [], 'two\nlines'), manifest('c', [], 'x'.repeat(MAX_DESCRIPTION + 1)), manifest('d')]))
      .to.deep.equal([
        'packages/a/package.json: no "description"',
        'packages/b/package.json: "description" must be one line without "|"',
        `packages/c/package.json: "description" is ${MAX_DESCRIPTION + 1} characters (at most ${MAX_DESCRIPTION})`,
      ])
  })
})

describe('shared README module table', () => {
  it('the committed shared README holds the table its index generates, and lists every module of the face (npm run docs:map)', () => {
    const readme = readFileSync(join(SHARED_DIR, 'README.md'), 'utf8')
    const modules = sharedModules()
    expect(captionProblems(modules)).to.deep.equal([])
    expect(withSharedModules(readme, sharedModuleTable(modules)), 'packages/shared/README.md is stale: run `npm run docs:map`').to.equal(readme)
    const index = readFileSync(join(SHARED_DIR, 'src', 'index.ts'), 'utf8')
    for (const { path } of faceModules(index)) expect(readme).to.include(`[\`${path}.ts\`](src/${path}.ts)`)
  })

  it('reads the face\'s modules in order, merging a module named twice, without `type` and renames', () => {
    const index = [
      "export { b, type B } from './async/b.js'",
      "export type {\n  A, AA,\n} from './vocabulary/a.js'",
      "export { c as see } from './async/b.js'",
    ].join('\n')
    expect(faceModules(index)).to.deep.equal([{ path: 'async/b', names: ['b', 'B', 'see'] }, { path: 'vocabulary/a', names: ['A', 'AA'] }])
  })

  it('captions a module with the first sentence of its first comment, and names a module without one', () => {
    expect(caption("import x from 'y'\n\n// One rule. Then more.\n// Still more.\nexport const a = 1\n")).to.equal('One rule.')
    expect(caption('/**\n * A block, over\n * two lines: a | b. Rest.\n */\nexport const a = 1\n')).to.equal('A block, over two lines: a \\| b.')
    expect(caption('export const a = 1\n')).to.equal(undefined)
    expect(captionProblems([{ path: 'x/none', names: ['a'], caption: '' }])).to.deep.equal(['packages/shared/src/x/none.ts: no leading comment to caption it'])
  })

  it('replaces only what is between the markers', () => {
    const readme = `# shared\n${SHARED_START}\nold\n${SHARED_END}\n`
    expect(withSharedModules(readme, sharedModuleTable([{ path: 'async/b', names: ['b'], caption: 'B.' }])))
      .to.equal(`# shared\n${SHARED_START}\n| module | exports | what it is |\n|---|---|---|\n| [\`async/b.ts\`](src/async/b.ts) | \`b\` | B. |\n${SHARED_END}\n`)
    expect(() => withSharedModules('# none\n', 'table')).to.throw(/exactly one/)
  })
})
