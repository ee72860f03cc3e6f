// The quick start's background scenario (`npm start -- --background`), offline, as a user runs it.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { buildQuickstart, ROOT, runCli } from './helpers.js'

/** The package lines the children must report, computed here from the package.json files. */
function packageLines(): string[] {
  return readdirSync(join(ROOT, 'packages')).sort().flatMap((dir) => {
    const file = join(ROOT, 'packages', dir, 'package.json')
    if (!existsSync(file)) return []
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name: string; dependencies?: Record<string, string> }
    const deps = Object.keys(pkg.dependencies ?? {}).filter((name) => name.startsWith('@cordis-subagents/')).map((name) => name.slice('@cordis-subagents/'.length))
    return [`- ${pkg.name}: ${deps.length ? `depends on ${deps.join(', ')}` : 'no internal dependencies'}`]
  })
}

describe('quick start: background delegations (--background, offline)', function () {
  this.timeout(60_000)

  before(() => buildQuickstart())

  it('starts two background children, works meanwhile, collects both; the live tree shows them; usage rolls up', async () => {
    const cli = runCli(['--background'])
    expect(await cli.exited, cli.stderr()).to.equal(0)
    const out = cli.stdout()
    expect(out).to.match(/┌ subagent_bg → spawn: "Background summary, part 1 of 2" started/)
    expect(out).to.match(/┌ subagent_bg → spawn: "Background summary, part 2 of 2" started/)
    expect(out).to.match(/· main · step 3 · calls list_files \{"path":"\."\}/)
    expect(out).to.match(/· main · step 3 · calls subagent_wait \{"mode":"any"\}/)
    expect(out).to.match(/└ Background summary, part 2 of 2: completed in \d+\.\ds, 2 steps, \d+ tool calls/)
    const answer = out.slice(out.indexOf('\nanswer:\n'))
    for (const line of packageLines()) expect(answer).to.include(line)
    expect(answer).to.match(/Meanwhile I listed the workspace root myself: \d+ entries/)
    expect(out).to.match(/usage: parent \d+ tokens \(in \d+ \/ out \d+\) · delegated [1-9]\d* tokens across 2 delegations/)
  })

  it('--json: both background delegations completed and every result was collected exactly once', async () => {
    const cli = runCli(['--json', '--background'])
    expect(await cli.exited, cli.stderr()).to.equal(0)
    const result = JSON.parse(cli.stdout())
    expect(result.stopReason).to.equal('completed')
    expect(result.delegations.map((d: any) => `${d.tool}→${d.provider}:${d.stopReason}`)).to.deep.equal(['subagent_bg→spawn:completed', 'subagent_bg→spawn:completed'])
    for (const line of packageLines()) expect(result.answer.split(line).length - 1, line).to.equal(1)
    expect(result.usage.delegated.inputTokens).to.be.greaterThan(0)
  })
})
