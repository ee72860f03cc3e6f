// Composition through the real @cordisjs/loader reading a real cordis.yml: the subagent tool
// loaded twice, providers edited, reloaded, disabled and re-enabled while the app runs.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { ScriptedModel } from '@cordis-subagents/agent'
import type { ToolChange } from '@cordis-subagents/tools'
import { type App, settle, startApp } from '@cordis-subagents/quickstart/app'
import { eventually, ROOT } from './helpers.js'

const FIXTURE = join(ROOT, 'packages/provider-acp/tests/fixtures/agent.mjs')

function config(acp: { description?: string; disabled?: boolean } = {}) {
  return `
- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: test
- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: spawn
  name: '@cordis-subagents/provider-spawn'
- id: acp
  name: '@cordis-subagents/provider-acp'${acp.disabled ? '\n  disabled: true' : ''}
  config:
    name: acp
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(FIXTURE)}, echo]${acp.description ? `\n    description: ${JSON.stringify(acp.description)}` : ''}
- id: tool-subagent
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
- id: tool-subagent-acp
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: acp
    toolName: subagent_acp
`
}

describe('cordis.yml through @cordisjs/loader: the subagent tool loaded twice', function () {
  this.timeout(30_000)
  let dir: string
  let file: string
  let app: App
  let changes: Array<[string, ToolChange]>
  const description = (name: string) => app.ctx.tools.list().find((tool) => tool.name === name)?.description

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loader-spec-'))
    file = join(dir, 'cordis.yml')
    writeFileSync(file, config())
    app = await startApp(file)
    changes = []
    app.ctx.on('tools/changed', (name, change) => { changes.push([name, change]) })
  })

  afterEach(async () => {
    await app.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('loads both tools, each bound to its provider with wording derived from it', () => {
    expect(app.ctx.subagents.list().map((p) => p.name).sort()).to.deep.equal(['acp', 'spawn'])
    expect(app.ctx.tools.list().map((t) => t.name).sort()).to.deep.equal(['subagent', 'subagent_acp'])
    expect(description('subagent')).to.include('does not see this conversation')
    expect(description('subagent_acp')).to.include('does not see this conversation').and.not.include('Runs on:')
  })

  it('editing the provider entry and loader.refresh() re-registers only its tool, with re-derived wording', async () => {
    const spawnWording = description('subagent')
    writeFileSync(file, config({ description: 'the echo agent (v2)' }))
    await app.loader.refresh()
    await settle(app.ctx)
    expect(changes).to.deep.equal([['subagent_acp', 'removed'], ['subagent_acp', 'added']])
    expect(description('subagent_acp')).to.match(/Runs on: the echo agent \(v2\)\.$/)
    expect(description('subagent')).to.equal(spawnWording)
  })

  it('loader.update() on the provider entry re-registers only its tool and writes the file', async () => {
    const entry = app.loader.resolve('acp')
    await app.loader.update('acp', { config: { ...entry.options.config, description: 'updated in code' } })
    await settle(app.ctx)
    expect(changes).to.deep.equal([['subagent_acp', 'removed'], ['subagent_acp', 'added']])
    expect(description('subagent_acp')).to.match(/Runs on: updated in code\.$/)
    // The loader persists the change to cordis.yml (asynchronously, on a timer of its own).
    await eventually(() => readFileSync(file, 'utf8').includes('updated in code'))
    expect(readFileSync(file, 'utf8')).to.include('updated in code')
  })

  it('disabling the provider entry removes its tool; re-enabling restores it and delegations work again', async () => {
    writeFileSync(file, config({ disabled: true }))
    await app.loader.refresh()
    await settle(app.ctx)
    expect(changes).to.deep.equal([['subagent_acp', 'removed']])
    expect(app.ctx.tools.list().map((t) => t.name)).to.deep.equal(['subagent'])
    expect(app.ctx.subagents.get('acp')).to.equal(undefined)

    await app.loader.update('acp', { disabled: null })
    await settle(app.ctx)
    expect(changes).to.deep.equal([['subagent_acp', 'removed'], ['subagent_acp', 'added']])
    expect(app.ctx.tools.list().map((t) => t.name).sort()).to.deep.equal(['subagent', 'subagent_acp'])

    // The restored tool really delegates: a real ACP subprocess answers, one level deeper.
    const model = new ScriptedModel([
      ScriptedModel.call('subagent_acp', { description: 'echo over ACP', prompt: 'ping' }),
      (request) => ({ text: `child said: ${request.messages.at(-1)!.content}` }),
    ])
    const dispose = app.ctx.agents.registerModel('test', model)
    const parent = app.ctx.agents.create()
    try {
      const result = await parent.run('delegate it')
      expect(result.stopReason).to.equal('completed')
      const echoed = JSON.parse(result.text.slice('child said: '.length))
      expect(echoed).to.include({ prompt: 'ping', depth: '1' })
    } finally {
      await parent.dispose()
      dispose()
    }
  })

  it('disabling the spawn provider through loader.update() leaves subagent_acp untouched', async () => {
    const acpWording = description('subagent_acp')
    await app.loader.update('spawn', { disabled: true })
    await settle(app.ctx)
    expect(changes).to.deep.equal([['subagent', 'removed']])
    expect(description('subagent_acp')).to.equal(acpWording)
    await app.loader.update('spawn', { disabled: null })
    await settle(app.ctx)
    expect(changes).to.deep.equal([['subagent', 'removed'], ['subagent', 'added']])
  })
})
