// The quick start as a user runs it (`npm start` = build, then the built CLI), offline.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { ASK_DEMO, currentDemoBlock, DEMO_READMES, demoBlock, typeInto } from '../scripts/support/demo-output.js'
import { acpAgentProcesses, alive, buildQuickstart, eventually, offlineEnv, QUICKSTART, ROOT, runCli, withAbsolutePaths } from './helpers.js'

/** What the demo's children must find by reading the package.json of every package, computed here independently. */
function workspaceDependencies() {
  const packages = readdirSync(join(ROOT, 'packages')).sort().flatMap((dir) => {
    const file = join(ROOT, 'packages', dir, 'package.json')
    if (!existsSync(file)) return []
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name: string; dependencies?: Record<string, string> }
    const deps = Object.keys(pkg.dependencies ?? {}).filter((name) => name.startsWith('@cordis-subagents/')).map((name) => name.slice('@cordis-subagents/'.length))
    return [{ name: pkg.name, deps }]
  }).sort((a, b) => a.name.localeCompare(b.name))
  const lines = packages.map(({ name, deps }) => `- ${name}: ${deps.length ? `depends on ${deps.join(', ')}` : 'no internal dependencies'}`)
  const most = packages.reduce((a, b) => (b.deps.length > a.deps.length ? b : a))
  return { lines, most: { name: most.name, deps: most.deps.length }, none: packages.filter((p) => !p.deps.length).map((p) => p.name) }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

describe('quick start (examples/quickstart, offline)', function () {
  this.timeout(60_000)

  before(() => buildQuickstart())
  /** The stdout of the first test's run (a completed one), which the READMEs' demo output is compared with. */
  let demoRun: string | undefined

  it('prints a live delegation tree, the aggregated answer and a usage line, exits 0 and leaves no ACP process', async () => {
    const cli = runCli([])
    const code = await cli.exited
    const out = cli.stdout()
    expect(code, cli.stderr()).to.equal(0)
    // The live tree: both spawn delegations and the ACP delegation, with child tool calls and times.
    expect(out).to.match(/┌ subagent → spawn: "Summarize packages, part 1 of 2" started/)
    expect(out).to.match(/┌ subagent → spawn: "Summarize packages, part 2 of 2" started/)
    expect(out).to.match(/┌ subagent_acp → acp: "Root workspace scripts \(separate process\)" started/)
    expect(out).to.match(/┌ subagent_remote → remote: "Workspace top level \(remote, over A2A\)" started \([0-9a-f-]{36}\)/)
    expect(out).to.match(/│ Summarize packages, part 1 of 2 · step 1 · calls files__read_text_file/)
    expect(out).to.match(/└ Summarize packages, part 2 of 2: completed in \d+\.\ds, 2 steps, \d+ tool calls/)
    // The answer comes from real tool output: every package.json under packages/ was read.
    const answer = out.slice(out.indexOf('\nanswer:\n'))
    for (const line of workspaceDependencies().lines) expect(answer).to.include(line)
    // The ACP child is our own agent in another process, one level deeper (SUBAGENT_DEPTH).
    const acp = answer.match(/npm scripts [^\n]*\(answered at depth 1, pid (\d+)\)/)
    expect(acp, out).to.not.equal(null)
    expect(Number(acp![1])).to.not.equal(cli.child.pid)
    // The A2A child is our agent served over HTTP by another process (the a2a-host plugin's server).
    const remote = answer.match(/Workspace top level \(answered by a remote agent over A2A, another process over HTTP\):\n\d+ top-level entries; directories: [^\n]*packages[^\n]* \(answered at depth 1, pid (\d+)\)/)
    expect(remote, out).to.not.equal(null)
    expect(Number(remote![1])).to.not.equal(cli.child.pid).and.not.equal(Number(acp![1]))
    expect(out).to.match(/usage: parent \d+ tokens \(in \d+ \/ out \d+\) · delegated \d+ tokens across 4 delegations · total \d+ · 3 steps · \d+\.\ds/)
    expect(alive(Number(acp![1]))).to.equal(false)
    // SIGTERM went to the server as the app stopped; it exits on its own right after.
    expect(await eventually(() => !alive(Number(remote![1])))).to.equal(true)
    expect(acpAgentProcesses()).to.deep.equal([])
    demoRun = out
  })

  it('the READMEs show this output as `npm run docs:demo` writes it (masked, in a fixed order)', async () => {
    if (demoRun === undefined) {
      // Run alone (--grep): a run of its own.
      const cli = runCli([])
      expect(await cli.exited, cli.stderr()).to.equal(0)
      demoRun = cli.stdout()
    }
    const block = demoBlock(demoRun)
    for (const file of DEMO_READMES) {
      const shown = currentDemoBlock(readFileSync(join(ROOT, file), 'utf8'))
      expect(shown, `${file} has no demo-output block`).to.be.a('string')
      expect(shown, `${file}'s demo output is stale: run \`npm run docs:demo\``).to.equal(block)
    }
  })

  it('the quick start README shows the --ask sample as `npm run docs:demo` writes it (Enter, the answer, masked)', async () => {
    const cli = runCli([...ASK_DEMO.args])
    const shown = typeInto(cli.child, ASK_DEMO.input)
    // A question that never comes leaves the CLI waiting for input: end it, and the exit code says so.
    const timer = setTimeout(() => cli.child.kill('SIGKILL'), 45_000)
    const code = await cli.exited
    clearTimeout(timer)
    expect(code, `${shown()}\n${cli.stderr()}`).to.equal(0)
    const block = demoBlock(shown())
    const answered = /\n> agent\n[\s\S]*\nFrom the subagent that asked you:\n@cordis-subagents\/agent: /
    expect(block, 'the answer reached the child and came back').to.match(answered)
    for (const file of ASK_DEMO.readmes) {
      const shownInReadme = currentDemoBlock(readFileSync(join(ROOT, file), 'utf8'), ASK_DEMO)
      expect(shownInReadme, `${file} has no ask-output block`).to.be.a('string')
      expect(shownInReadme, `${file}'s ${ASK_DEMO.title} is stale: run \`npm run docs:demo\``).to.equal(block)
    }
  })

  it('--verbose logs the start without inject warnings or stack traces (the remote entry reads quickstartA2a without a warning)', async () => {
    const cli = runCli(['--verbose'])
    expect(await cli.exited, cli.stderr()).to.equal(0)
    const all = `${cli.stdout()}\n${cli.stderr()}`
    // The debug lines are there (so a silenced logger cannot pass this), the warning is not.
    expect(all).to.include('tool "subagent_remote" mounted on provider "remote"')
    expect(all).to.not.include('is not registered')
    expect(all).to.not.match(/^\s+at .+:\d+:\d+\)?$/m)
  })

  it('--json prints exactly one JSON object with the answer, usage and delegations', async () => {
    const cli = runCli(['--json', 'Which packages are there?'])
    expect(await cli.exited, cli.stderr()).to.equal(0)
    const result = JSON.parse(cli.stdout())
    expect(result.task).to.equal('Which packages are there?')
    expect(result.stopReason).to.equal('completed')
    expect(result.answer).to.include('@cordis-subagents/subagent-tool: depends on shared, tools, subagents-service, agent')
    expect(result.delegations.map((d: any) => `${d.tool}→${d.provider}:${d.stopReason}`).sort())
      .to.deep.equal(['subagent_acp→acp:completed', 'subagent_remote→remote:completed', 'subagent→spawn:completed', 'subagent→spawn:completed'])
    expect(result.delegations.every((d: any) => d.depth === 1)).to.equal(true)
    expect(result.usage.delegated.inputTokens).to.be.greaterThan(0)
    expect(result.usage.total.inputTokens).to.equal(result.usage.own.inputTokens + result.usage.delegated.inputTokens)
  })

  it('`npm start --silent -- --json` (as the README says, for piping into jq) prints only the JSON object', async () => {
    // Without --silent npm prints its "> cordis-subagents@… start" banner on stdout first.
    const child = spawn('npm', ['start', '--silent', '--', '--json', 'Which packages are there?'], { cwd: ROOT, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(code, stderr).to.equal(0)
    const result = JSON.parse(stdout)
    expect(result.stopReason).to.equal('completed')
    expect(stdout.trimEnd().split('\n')).to.have.length(1)
  })

  it('Ctrl-C while children run cancels them, reaps the ACP process and exits 0', async () => {
    // Slow replies keep the children in flight long enough to interrupt them.
    const cli = runCli([], offlineEnv({ QUICKSTART_DEMO_DELAY: '1500' }))
    const [, pid] = await cli.waitFor(/subagent_acp → acp: .* started \(session-(\d+)-[0-9a-f-]+\)/, 30_000)
    expect(alive(Number(pid))).to.equal(true)
    // The agent carries this process's mark, so the leftover checks (acpAgentProcesses) do see it.
    expect(await eventually(() => acpAgentProcesses().some((line) => line.trim().split(/\s+/)[0] === pid)), 'the agent lacks the mark').to.equal(true)
    cli.child.kill('SIGINT')
    expect(await cli.exited, cli.stderr()).to.equal(0)
    expect(cli.stdout()).to.include('cancelling in-flight delegations')
    expect(cli.stdout()).to.not.include('\nanswer:\n')
    expect(await eventually(() => !alive(Number(pid)))).to.equal(true)
  })

  describe('--interactive', () => {
    let dir: string
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'quickstart-'))
    })
    after(() => rmSync(dir, { recursive: true, force: true }))

    it('keeps a conversation (the second turn forks), hot-reloads an edited provider and quits on end of input', async () => {
      // A copy of the shipped cordis.yml (its file-relative paths made absolute, since the copy moved).
      const config = join(dir, 'cordis.yml')
      const shipped = readFileSync(join(QUICKSTART, 'cordis.yml'), 'utf8')
      const copy = withAbsolutePaths(shipped)
      expect(copy).to.not.equal(shipped)
      writeFileSync(config, copy)
      const cli = runCli(['--interactive', '--config', config])
      await cli.waitFor(/^> /m)
      cli.child.stdin!.write('\n')
      await cli.waitFor(/usage: parent [^\n]*3 steps/)
      cli.child.stdin!.write('Which package has the most internal dependencies?\n')
      await cli.waitFor(/┌ subagent_fork → fork: "Rank packages by dependencies" started/)
      // The forked child inherited the first turn and answers from it.
      const { most, none } = workspaceDependencies()
      const ranking = `${escape(most.name)} has the most internal dependencies \\(${most.deps}\\); ${none.map(escape).join(', ')} depend on no other package of ours\\.`
      await cli.waitFor(new RegExp(`From the forked subagent \\(it inherited our earlier turns\\):\\nUsing the \\d+ messages I inherited: ${ranking}`))

      // Hot reload: describe the fork provider differently; only subagent_fork re-registers.
      const before = cli.stdout().length
      writeFileSync(config, copy.replace(/(- id: fork\n\s+name: .*\n\s+config:\n\s+name: fork\n)/, '$1    description: a forked helper (v2)\n'))
      await cli.waitFor(/\[reload\] tool subagent_fork registered: [^\n]*Runs on: a forked helper \(v2\)\./)
      const reload = cli.stdout().slice(before)
      expect(reload).to.include('[reload] tool subagent_fork unregistered')
      expect(reload.match(/\[reload\] tool (\S+)/g)).to.deep.equal(['[reload] tool subagent_fork', '[reload] tool subagent_fork'])

      const beforeQuit = cli.stdout().length
      cli.child.stdin!.end()
      expect(await cli.exited, cli.stderr()).to.equal(0)
      // Quitting unregisters every tool; that is not reported as a reload.
      expect(cli.stdout().slice(beforeQuit)).to.not.include('[reload]')
      expect(acpAgentProcesses()).to.deep.equal([])
    })
  })
})
