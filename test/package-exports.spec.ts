// Every export of every package of ours points tests and tools at its sources through the project's
// own condition; an entry without it silently resolves to the built lib/ (stale in a dev loop).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { ROOT } from './helpers.js'

describe('package exports', () => {
  const manifests = [
    ...readdirSync(join(ROOT, 'packages')).map((name) => join(ROOT, 'packages', name, 'package.json')),
    join(ROOT, 'examples/quickstart/package.json'),
  ]

  it('every source-backed export entry uses the cordis-subagents-source condition, none uses development', () => {
    const problems: string[] = []
    for (const file of manifests) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name: string; exports?: Record<string, unknown> }
      for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
        if (typeof target !== 'object' || target === null) continue
        const conditions = Object.keys(target)
        if (conditions.includes('development')) problems.push(`${manifest.name} ${subpath}: "development"`)
        if (!conditions.includes('cordis-subagents-source')) problems.push(`${manifest.name} ${subpath}: no "cordis-subagents-source"`)
      }
    }
    expect(problems).to.deep.equal([])
    expect(manifests.length).to.be.greaterThan(8)
  })
})
