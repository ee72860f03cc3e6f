// Every stable error code a package declares (the string members of an exported `…Code` type: what its errors carry as
// `code`, or its answers as `data.code`) is named in that package's README (README.md or README-*.md), where a user looks
// up what a code means and what to do. A shared code (a limit, a refused tell) is named in the README of a package that
// surfaces it. Catches a code added, or renamed, without its row (issue 41: docs drift caught by tests).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { expect } from 'chai'
import { ROOT } from './helpers.js'

const PACKAGES = join(ROOT, 'packages')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** The codes of each exported `…Code` union of `pkg`'s src: code → where it is declared. */
function declaredCodes(pkg: string): Map<string, string> {
  const codes = new Map<string, string>()
  for (const file of sources(join(PACKAGES, pkg, 'src'))) {
    const text = readFileSync(file, 'utf8')
    for (const match of text.matchAll(/export type \w*Code\s*=([^;]*?)(?=\n(?:export|const|function|interface|class|\/\*\*|$))/g)) {
      const line = text.slice(0, match.index).split('\n').length
      const body = match[1]!.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')
      for (const [, code] of body.matchAll(/'([A-Z][A-Z0-9_]+)'/g)) if (!codes.has(code!)) codes.set(code!, `${relative(ROOT, file)}:${line}`)
    }
  }
  return codes
}

const readmeText = (pkg: string) => readdirSync(join(PACKAGES, pkg)).filter((name) => /^README(-[\w-]+)?\.md$/.test(name))
  .map((name) => readFileSync(join(PACKAGES, pkg, name), 'utf8')).join('\n')

describe('package READMEs name every error code their package declares', () => {
  const packages = readdirSync(PACKAGES).filter((pkg) => statSync(join(PACKAGES, pkg, 'src'), { throwIfNoEntry: false })?.isDirectory())
  const everyReadme = packages.map(readmeText).join('\n')

  it('finds the code unions (at least one a package that throws coded errors)', () => {
    expect(packages.filter((pkg) => declaredCodes(pkg).size).length).to.be.at.least(15)
  })

  for (const pkg of packages) {
    it(pkg, () => {
      // Shared's codes are surfaced by the packages that use them: any README of ours may name them.
      const readme = pkg === 'shared' ? everyReadme : readmeText(pkg)
      const missing = [...declaredCodes(pkg)].filter(([code]) => !new RegExp(`\\b${code}\\b`).test(readme)).map(([code, at]) => `${code} (${at})`)
      expect(missing, `codes no README of ${pkg} names`).to.deep.equal([])
    })
  }
})
