// The quick start's asking demo, through the real CLI and the shipped cordis.yml: a child of
// `subagent_ask` asks which package to summarize; the question rides up to the root, whose run
// ends `pending`; in --interactive mode the CLI prints it and the person's next line answers it
// (`agent.resume`). Without --interactive the run ends pending and the CLI says how to answer.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { acpAgentProcesses, buildQuickstart, type Cli, ROOT, runCli } from './helpers.js'

const QUESTION = /question from subagent run-[\w-]+( → run-[\w-]+)* \(ask\):\nWhich package should I summarize\? Name one folder of packages\/ \(for example: agent, tools, console\)\.\n/

describe('quick start: a child asks, the person answers (--ask)', function () {
  this.timeout(90_000)
  before(() => buildQuickstart())
  let cli: Cli | undefined
  afterEach(async () => {
    // A failed expectation leaves the CLI running: end it so the leak audit sees only real leaks.
    if (cli && cli.child.exitCode === null && cli.child.signalCode === null) {
      cli.child.kill('SIGKILL')
      await cli.exited
    }
    cli = undefined
  })

  it('--interactive: the question is printed at the root; the next line answers it and the child finishes with that package', async () => {
    cli = runCli(['--interactive', '--ask'])
    await cli.waitFor(/^> /m, 30_000)
    cli.child.stdin!.write('\n')
    await cli.waitFor(QUESTION, 30_000)
    await cli.waitFor(/your answer \(the next line you type goes to it\):\n/)
    cli.child.stdin!.write('\n')
    await cli.waitFor(/\(an answer cannot be empty; type your answer\)/)
    cli.child.stdin!.write('agent\n')
    const pkg = JSON.parse(readFileSync(join(ROOT, 'packages/agent/package.json'), 'utf8'))
    await cli.waitFor(new RegExp(`From the subagent that asked you:\\n${pkg.name.replace(/[/]/g, '\\/')}: `), 30_000)
    await cli.waitFor(/usage: parent [^\n]*/)
    expect(cli.stdout()).to.match(/└ Summarize the package you name: completed/)
    cli.child.stdin!.end()
    expect(await cli.exited, cli.stderr()).to.equal(0)
    expect(acpAgentProcesses()).to.deep.equal([])
  })

  it('without --interactive the run ends pending: the question and how to answer it are printed, exit code 1', async () => {
    cli = runCli(['--ask'])
    await cli.waitFor(QUESTION, 30_000)
    await cli.waitFor(/Run with --interactive to answer it/)
    expect(await cli.exited, cli.stderr()).to.equal(1)
  })

  it('--interactive --view: the live page answers the question; the root goes on and the terminal prints its result', async () => {
    cli = runCli(['--interactive', '--ask', '--view'])
    await cli.waitFor(/^> /m, 30_000)
    const [, base, token] = /view: (http:\/\/[^\s#]+)#token=(\S+)/.exec(cli.stderr())!
    const api = (path: string, init: RequestInit = {}) => fetch(new URL(path, base), { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } })
    cli.child.stdin!.write('\n')
    await cli.waitFor(QUESTION, 30_000)
    let runId: string | undefined
    for (let i = 0; i < 500 && !runId; i++) {
      const { nodes } = await (await api('/api/snapshot')).json() as { nodes: { runId: string; can: { answer: boolean } }[] }
      runId = nodes.find((node) => node.can.answer)?.runId
      if (!runId) await new Promise((resolve) => setImmediate(resolve))
    }
    expect(runId, 'the page offers an answer box').to.be.a('string')
    const answered = await api(`/api/runs/${runId}/answer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ answer: 'agent' }) })
    expect(answered.status).to.equal(200)
    await cli.waitFor(/\(the question was answered elsewhere, on the live page; the turn went on\)/, 30_000)
    const pkg = JSON.parse(readFileSync(join(ROOT, 'packages/agent/package.json'), 'utf8'))
    await cli.waitFor(new RegExp(`From the subagent that asked you:\\n${pkg.name.replace(/[/]/g, '\\/')}: `), 30_000)
    await cli.waitFor(/usage: parent [^\n]*/)
    cli.child.stdin!.end()
    expect(await cli.exited, cli.stderr()).to.equal(0)
    expect(acpAgentProcesses()).to.deep.equal([])
  })
})
