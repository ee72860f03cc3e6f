import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'

// The README's source map: the core path in src/, each option in its folder. The core imports an
// option; an option may use the core's parts but never the run, the factory, the plugin or the face.
const src = fileURLToPath(new URL('../src/', import.meta.url))
const OPTION_FOLDERS = ['containment', 'fork', 'pool', 'questions', 'resume']
const CORE_TOP = ['index.ts', 'plugin.ts', 'provider.ts', 'run.ts']

function sources(): string[] {
  return readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts')).sort()
}

function localImports(file: string): string[] {
  const text = readFileSync(join(src, file), 'utf8')
  return [...text.matchAll(/from\s+'(\.{1,2}\/[^']+)\.js'/g)]
    .map((match) => relative(src, normalize(join(src, dirname(file), `${match[1]}.ts`))))
}

describe('provider-acp source layout (README: source layout)', () => {
  it('the option folders are the ones the README names, and nothing is nested deeper', () => {
    const folders = new Set(sources().filter((file) => file.includes('/')).map((file) => file.split('/')[0]))
    expect([...folders].sort()).to.deep.equal(OPTION_FOLDERS)
    expect(sources().filter((file) => file.split('/').length > 2)).to.deep.equal([])
  })

  it('no option folder imports the run, the factory, the plugin or the face', () => {
    const offenders = sources()
      .filter((file) => file.includes('/'))
      .flatMap((file) => localImports(file).filter((target) => CORE_TOP.includes(target)).map((target) => `${file} -> ${target}`))
    expect(offenders).to.deep.equal([])
  })

  it('every file the README names exists', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
    const section = readme.slice(readme.indexOf('- Source layout'), readme.indexOf('- Provider: capabilities'))
    const rows = [...section.matchAll(/^ {2}\| `src\/([a-z-]*)\/?` \| (.*) \|$/gm)]
    expect(rows.map((row) => row[1]).sort()).to.deep.equal(['', ...OPTION_FOLDERS])
    const named = rows.flatMap(([, folder, text]) =>
      [...text.matchAll(/`([a-z-]+\.ts)`/g)].map((match) => (folder ? `${folder}/${match[1]}` : match[1])))
    expect(named.sort()).to.deep.equal(sources())
  })
})
