// The README's package map is generated from the package.json files (scripts/package-map.ts);
// `npm run lint` runs its --check. These check the generator and that the committed README is current.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { descriptionProblems, END, layered, MAX_DESCRIPTION, packageTable, START, withPackageMap } from '../scripts/support/package-map.js'
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
