// The plugins loaded from a koishi.yml by Koishi's own loader, the way a Koishi user runs them:
// `koishi start` (koishi 4.18's CLI) forks its worker, whose @koishijs/loader reads the config and
// resolves each plugin key through ns-require. Keys starting with `./` resolve relative to the
// config's folder, so `./node_modules/@cordis-subagents/tools` loads our package by path, with no
// koishi-plugin-* wrapper.
//
// It runs in a child process because the worker is CommonJS: it require()s our ESM packages
// (Node >= 20.19 does that without a flag), and Koishi's App comes from cordis' CommonJS build while
// our packages import its ESM build: two copies of cordis in one process, which this test shows
// working (mocha itself runs with --no-experimental-require-module, so it cannot host this).
//
// The project is a temporary folder holding test/fixtures/koishi-yml/{koishi.yml,delegate.cjs} and a
// node_modules link to this repository's. The loader writes koishi.yml back on start, so it runs on
// a copy. delegate.cjs runs one delegation once the app is
// ready and prints `RESULT <json>`. Koishi without a server plugin exits by itself once the event
// loop is empty, so exit code 0 also shows the plugins left nothing running.
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { buildPackages, koishiStart, type KoishiRun as Run, resultOf } from './support/koishi-start.js'
import { ROOT } from './helpers.js'

const FIXTURE = join(ROOT, 'test/fixtures/koishi-yml')
const PACKAGES = ['tools', 'agent', 'subagents-service', 'provider-spawn', 'provider-fork', 'subagent-tool']

describe('koishi.yml loaded by Koishi\'s own loader (`koishi start`)', function () {
  this.timeout(30_000)
  let project: string
  let run: Run

  before(async () => {
    buildPackages(PACKAGES)
    project = mkdtempSync(join(tmpdir(), 'koishi-yml-'))
    copyFileSync(join(FIXTURE, 'koishi.yml'), join(project, 'koishi.yml'))
    copyFileSync(join(FIXTURE, 'delegate.cjs'), join(project, 'delegate.cjs'))
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
    run = await koishiStart(project, 20_000).done
  })

  after(() => {
    if (project) rmSync(project, { recursive: true, force: true })
  })

  const result = () => resultOf(run)

  it('loads every plugin by its ./node_modules path and exits 0 by itself, with no error logged', () => {
    expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).to.equal(0)
    expect(run.signal).to.equal(null)
    // The loader logs each entry by its key: path, then the id given in koishi.yml.
    const keys = ['tools:tools', 'agent:agent', 'subagents-service:subagents', 'provider-spawn:spawn', 'provider-fork:fork', 'subagent-tool:subagent', 'subagent-tool:subagent-fork']
    for (const key of keys) expect(run.stdout).to.include(`apply plugin ./node_modules/@cordis-subagents/${key}\n`)
    expect(run.stdout).to.include('apply plugin ./delegate.cjs:delegate\n')
    // Koishi logs errors (an unresolvable key, a failed plugin) as `[E]` lines.
    expect(`${run.stdout}\n${run.stderr}`).to.not.match(/\[E\]|cannot resolve plugin/)
    expect(result().error).to.equal(undefined)
  })

  it('registers the subagent tool twice, `subagent` on spawn and `subagent_fork` on fork', () => {
    const { tools, providers } = result()
    expect(providers.slice().sort()).to.deep.equal(['fork', 'spawn'])
    expect(tools.map((tool: any) => tool.name).sort()).to.deep.equal(['subagent', 'subagent_fork'])
    // The description is written from the provider: only fork's child sees the conversation.
    const description = (name: string) => tools.find((tool: any) => tool.name === name).description
    expect(description('subagent')).to.include('does not see this conversation')
    expect(description('subagent_fork')).to.include('copy of this conversation')
  })

  it('runs a delegation through each tool: the root agent answers from both children', () => {
    const { stopReason, text, ends } = result()
    expect(stopReason).to.equal('completed')
    expect(text).to.equal('colour: teal; number: 7')
    // The model calls `subagent` first and `subagent_fork` second, so this is tool → provider.
    expect(ends).to.deep.equal(['spawn:1:completed', 'fork:1:completed'])
  })
})
