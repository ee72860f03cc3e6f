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

  it('the run-path packages are faces: named exports only, no internal helpers or restated vocabulary', async () => {
    const faces = ['shared', 'tools', 'subagents-service', 'provider-spawn', 'provider-fork', 'subagent-tool', 'subagent-control']
    for (const name of faces) {
      const source = readFileSync(join(ROOT, 'packages', name, 'src/index.ts'), 'utf8')
      expect(source, `${name}: export *`).to.not.match(/export \*/)
    }
    const leaks: Record<string, string[]> = {
      '@cordis-subagents/tools': ['count', 'addUsage', 'emptyWork', 'LimitError', 'withoutCallerTracing', 'describeError', 'TOOL_NAME_PATTERN'],
      '@cordis-subagents/subagents-service': ['describeError', 'PROVIDER_NAME_PATTERN', 'MAX_MESSAGE_LENGTH', 'isObject', 'checkRequest'],
      '@cordis-subagents/subagent-tool': ['startedText', 'capOutput', 'runDelegation', 'continueParked', 'settleStarted', 'controlVerbs'],
      '@cordis-subagents/subagent-tool/control': ['buildVerbs', 'statusLine', 'waitResult'],
      '@cordis-subagents/subagent-control': ['buildVerbs', 'statusLine', 'waitResult'],
    }
    for (const [specifier, names] of Object.entries(leaks)) {
      const mod = await import(specifier) as Record<string, unknown>
      for (const leaked of names) expect(mod, `${specifier} exports ${leaked}`).to.not.have.property(leaked)
    }
  })
})
