// The structure the docs claim, held to the code: paths the docs name exist, the README's architecture names every
// package, and the dependency direction of DESIGN §3 and the README ("never the other way") holds for every package.
// (The README's package map is checked by package-map.spec.ts; a package's `src/index.ts` by ESLint.)
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { expect } from 'chai'
import { internalDependencies, workspaceManifests } from '../scripts/support/workspace-packages.js'
import { ROOT } from './helpers.js'

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8')

const packageReadmes = () => readdirSync(join(ROOT, 'packages')).flatMap((name) =>
  readdirSync(join(ROOT, 'packages', name)).filter((file) => /^README.*\.md$/.test(file)).map((file) => `packages/${name}/${file}`))

/** Each floor may depend only on lower floors (DESIGN §3). A new package takes its place here. */
const FLOORS: Record<string, number> = {
  'shared': 0,
  'tools': 1, 'checkpoints': 1, 'config-watch': 1,
  'agent': 2,
  'model-openai': 3, 'chatluna-bridge': 3, 'subagents-service': 3, 'definitions': 3, 'mcp': 3, 'serve-a2a': 3,
  'subagent-tool': 4, 'serve-acp': 4, 'provider-spawn': 4, 'provider-acp': 4, 'provider-a2a': 4, 'telemetry': 4, 'console': 4, 'serve-mcp': 4, 'koishi-chat': 4,
  'subagent-control': 5, 'provider-fork': 5, 'koishi-console': 5,
  'koishi-plugin-subagents': 6,
}
const SERVING = ['serve-acp', 'serve-a2a', 'serve-mcp']

describe('what the docs claim about the structure', () => {
  it('every repository path and relative link in the docs exists', () => {
    const docs = ['README.md', 'RELIABILITY.md', 'CONTRIBUTING.md', 'bench/README.md', ...packageReadmes()]
    const missing: string[] = []
    for (const doc of docs) {
      const text = read(doc)
      for (const [, link] of text.matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)/g)) {
        if (!existsSync(normalize(join(ROOT, dirname(doc), link)))) missing.push(`${doc}: (${link})`)
      }
      for (const [, path] of text.matchAll(/(?<![\w/.-])((?:packages|test|scripts|examples|bench|deploy)\/[\w./-]+?)\.?(?=[`)\s,;:'"]|$)/g)) {
        if (!existsSync(join(ROOT, path)) && !existsSync(join(ROOT, dirname(doc), path))) missing.push(`${doc}: ${path}`)
      }
    }
    expect(missing).to.deep.equal([])
  })

  it('every cross-package spec in CONTRIBUTING\'s table exists in test/', () => {
    const text = read('CONTRIBUTING.md')
    const table = text.slice(text.indexOf('| spec | what it checks |'), text.indexOf('**What a test run starts.**'))
    const named = [...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap(([, cell]) => [...cell.matchAll(/`([\w.-]+\.spec\.ts)`/g)].map((match) => match[1]))
    expect(named.length).to.be.greaterThan(10)
    expect(named.filter((spec) => !existsSync(join(ROOT, 'test', spec)))).to.deep.equal([])
  })

  it('the README\'s architecture drawing names every package', () => {
    const readme = read('README.md')
    const section = readme.slice(readme.indexOf('## Architecture'))
    const drawing = section.slice(section.indexOf('```'), section.indexOf('```', section.indexOf('```') + 3))
    const packages = workspaceManifests(['packages']).filter((manifest) => !manifest.private).map((manifest) => manifest.dir.split('/')[1])
    expect(packages.filter((name) => !new RegExp(`(?<![\\w-])${name}(?![\\w-])`).test(drawing))).to.deep.equal([])
  })

  it('every package depends only on packages below it, and nothing depends on a serving plugin', () => {
    const problems: string[] = []
    for (const manifest of workspaceManifests(['packages']).filter((entry) => !entry.private)) {
      const name = manifest.dir.split('/')[1]
      if (!(name in FLOORS)) {
        problems.push(`${name}: not placed; give it a floor in test/docs-claims.spec.ts (DESIGN §3)`)
        continue
      }
      for (const dependency of internalDependencies(manifest)) {
        if (!(FLOORS[dependency] < FLOORS[name])) problems.push(`${name} (floor ${FLOORS[name]}) -> ${dependency} (floor ${FLOORS[dependency]})`)
        if (SERVING.includes(dependency)) problems.push(`${name} -> ${dependency}: a serving plugin is a door in, nothing builds on it`)
      }
    }
    expect(problems).to.deep.equal([])
  })
})
