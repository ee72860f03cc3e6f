// `npm start -- --team` as a user runs it: the built CLI, offline, with the whole shipped cordis.yml.
// The coordinator's team tool `delegate` hands work to the researcher (cordis.yml) and the reviewer
// (examples/quickstart/.claude/agents/reviewer.md) by name. test/quickstart-team.spec.ts checks the same in-process.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { buildQuickstart, ROOT, runCli } from './helpers.js'

describe('quick start: a coordinator\'s team (--team, offline CLI)', function () {
  this.timeout(60_000)

  before(() => buildQuickstart())

  it('prints the live tree with each member by name, and the merged answer', async () => {
    const cli = runCli(['--team'])
    expect(await cli.exited, cli.stderr()).to.equal(0)
    const out = cli.stdout()
    expect(out).to.match(/┌ delegate:researcher → spawn: "Summarize three packages" started/)
    expect(out).to.match(/┌ delegate:reviewer → spawn: "Review the root package.json" started/)
    expect(out.slice(out.indexOf('\nanswer:\n'))).to.include('From the reviewer:\nreviewer (soul from .claude/agents/reviewer.md): ')
  })

  it('--json: one delegation to each member by name, both completed, and an answer from both', async () => {
    const cli = runCli(['--json', '--team'])
    expect(await cli.exited, cli.stderr()).to.equal(0)
    const result = JSON.parse(cli.stdout())
    expect(result.stopReason).to.equal('completed')
    expect(result.delegations.map((d: any) => `${d.tool}→${d.provider}:${d.stopReason}`).sort())
      .to.deep.equal(['delegate:researcher→spawn:completed', 'delegate:reviewer→spawn:completed'])
    const rootName = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string }).name
    expect(result.answer).to.match(/^From the researcher:\n- @cordis-subagents\/\S+: /)
    expect(result.answer).to.include(`From the reviewer:\nreviewer (soul from .claude/agents/reviewer.md): ${rootName} has `)
  })
})
