// The Koishi market package (@cordis-subagents/koishi-plugin-subagents) as a Koishi user runs it:
// `koishi start` on a koishi.yml with one entry keyed `@cordis-subagents/subagents` (Koishi's loader
// resolves it to the package, as it does for a package installed from the market), its sections
// configured as the console's form writes them. The model is a scripted OpenAI-compatible server on
// 127.0.0.1 in this process; the Koishi worker runs in a child process (see koishi-yml.slow.spec.ts).
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { buildPackages, koishiStart, type KoishiRun, resultOf } from './support/koishi-start.js'
import { type ChatRequest, type ChatServer, startChatServer } from './support/chat-completions-server.js'
import { ROOT } from './helpers.js'

const FIXTURE = join(ROOT, 'test/fixtures/koishi-market')

/** The root is told which tool to use; the child (prompt `Name a colour.`) answers; the root reports the tool result. */
function script(request: ChatRequest) {
  const user = request.messages.find((m) => m.role === 'user')!.content!
  if (user === 'Name a colour.') return { text: 'teal' }
  const last = request.messages.at(-1)!
  if (last.role === 'tool') return { text: `the child said: ${last.content}` }
  const tool = /^Use (\w+)\.$/.exec(user)![1]
  return { tool, input: { description: 'pick a colour', prompt: 'Name a colour.' } }
}

describe('koishi-plugin-subagents under `koishi start` (market key, one config, a loopback model)', function () {
  this.timeout(60_000)
  let project: string
  let model: ChatServer
  let run: KoishiRun

  before(async () => {
    buildPackages(['koishi-plugin-subagents'])
    model = await startChatServer(script)
    project = mkdtempSync(join(tmpdir(), 'koishi-market-'))
    writeFileSync(join(project, 'koishi.yml'), readFileSync(join(FIXTURE, 'koishi.yml'), 'utf8').replaceAll('__MODEL_URL__', model.baseURL))
    copyFileSync(join(FIXTURE, 'driver.cjs'), join(project, 'driver.cjs'))
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
    run = await koishiStart(project, 45_000).done
  })

  after(async () => {
    await model?.close()
    if (project) rmSync(project, { recursive: true, force: true })
  })

  const output = () => `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`

  it('resolves the market key to the package, loads it, and exits 0 by itself once the loader unloads it', () => {
    expect(run.code, output()).to.equal(0)
    expect(run.signal).to.equal(null)
    expect(run.stdout).to.include('apply plugin @cordis-subagents/subagents:subagents\n')
    expect(run.stdout).to.include('unload plugin @cordis-subagents/subagents:subagents\n')
    expect(run.stdout).to.not.match(/cannot resolve plugin/)
  })

  it('a refused section (acp without `command`) is logged as an error naming it; it is the only error', () => {
    const errors = run.stdout.split('\n').filter((line) => line.includes('[E]'))
    expect(errors, output()).to.have.length(1)
    expect(errors[0]).to.match(/\[E\] subagents .*section acp \(provider-acp\) is refused \(SECTION_INVALID\): .*command/)
    expect(resultOf(run).before.providers).to.deep.equal(['fork', 'spawn'])
  })

  it('delegates through the composed `subagent` tool on the configured model server', () => {
    const { before, error } = resultOf(run)
    expect(error).to.equal(undefined)
    expect(before.tools).to.deep.equal(['subagent', 'subagent_fork'])
    expect(before.run).to.deep.equal({ stopReason: 'completed', text: 'the child said: teal' })
    // Every call carried the section's key and model id; the root saw the tools, the child none.
    expect(model.requests.every((r) => r.authorization === 'Bearer sk-loopback-test' && r.model === 'scripted-model')).to.equal(true)
    expect(model.requests[0].tools).to.deep.equal(['subagent', 'subagent_fork'])
    expect(model.requests[1].messages.find((m) => m.role === 'user')!.content).to.equal('Name a colour.')
  })

  it('a config change through Koishi\'s loader reloads the section: the tool is renamed and delegates again', () => {
    const { after, ends } = resultOf(run)
    expect(run.stdout).to.include('reload plugin @cordis-subagents/subagents:subagents\n')
    expect(after.tools).to.deep.equal(['delegate', 'subagent_fork'])
    expect(after.providers).to.deep.equal(['fork', 'spawn'])
    expect(after.run).to.deep.equal({ stopReason: 'completed', text: 'the child said: teal' })
    expect(ends).to.deep.equal(['spawn:1:completed', 'spawn:1:completed'])
    expect(model.requests).to.have.length(6)
  })
})
