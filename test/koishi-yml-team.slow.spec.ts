// A team from a koishi.yml, loaded by Koishi's own loader (`koishi start`, as test/koishi-yml.slow.spec.ts
// explains): the definitions registry, a reviewer from a Claude Code agent file, a researcher and a
// coordinator written in koishi.yml, and the coordinator's team tool. The root's scripted model names
// an agent outside the team (refused, with the team listed), then each member by name.
// The project is a temporary folder holding a copy of test/fixtures/koishi-yml-team and a node_modules
// link to this repository's.
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { buildPackages, koishiStart, type KoishiRun as Run, resultOf } from './support/koishi-start.js'
import { ROOT } from './helpers.js'

const FIXTURE = join(ROOT, 'test/fixtures/koishi-yml-team')
const PACKAGES = ['tools', 'agent', 'subagents-service', 'provider-spawn', 'definitions', 'subagent-tool']

describe('koishi.yml with a team, loaded by Koishi\'s own loader (`koishi start`)', function () {
  this.timeout(60_000)
  let project: string
  let run: Run

  before(async () => {
    buildPackages(PACKAGES)
    project = mkdtempSync(join(tmpdir(), 'koishi-yml-team-'))
    cpSync(FIXTURE, project, { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
    run = await koishiStart(project, 40_000).done
  })

  after(() => {
    if (project) rmSync(project, { recursive: true, force: true })
  })

  const result = () => resultOf(run)

  it('loads every entry (the Claude agents directory too) and exits 0 by itself, with no error logged', () => {
    expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).to.equal(0)
    expect(run.signal).to.equal(null)
    for (const key of ['definitions:definitions', 'definitions/lib/claude/index.js:claude-agents', 'definitions/lib/agents/index.js:team-agents', 'subagent-tool:delegate']) {
      expect(run.stdout).to.include(`apply plugin ./node_modules/@cordis-subagents/${key}\n`)
    }
    expect(`${run.stdout}\n${run.stderr}`).to.not.match(/\[E\]|cannot resolve plugin/)
    expect(result().error).to.equal(undefined)
  })

  it('the model sees the coordinator\'s team by name: { agent, description, prompt }, the members\' `does` in the description', () => {
    const { tool } = result()
    expect(Object.keys(tool.parameters.properties)).to.deep.equal(['agent', 'description', 'prompt'])
    expect(tool.parameters.properties.agent.enum).to.deep.equal(['researcher', 'reviewer'])
    expect(tool.description).to.include('- researcher: Looks facts up and answers with one word.\n- reviewer: Reviews an answer and says whether it holds.')
  })

  it('an out-of-team name is refused with the names listed; each member runs with its own soul', () => {
    const { refused, stopReason, text, ends } = result()
    expect(refused.isError).to.equal(true)
    expect(refused.content).to.include('No agent "ghost" in your team. Your team: researcher, reviewer.')
    expect(stopReason).to.equal('completed')
    expect(text).to.equal('answer: forty-two; review: it holds')
    expect(ends).to.deep.equal(['look it up:1:completed', 'check it:1:completed'])
  })
})
