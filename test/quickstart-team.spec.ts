// The quick start's team, in-process: the team entries of the shipped cordis.yml (the definitions, the
// reviewer from .claude/agents/reviewer.md, the researcher and coordinator, the `delegate` team tool)
// through the real @cordisjs/loader, driven by the offline demo model through `npm start -- --team`'s task.
// The entries that start processes (ACP, A2A, MCP) are left out here; test/quickstart-team.slow.spec.ts runs the CLI.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import { type App, settle, startApp } from '@cordis-subagents/quickstart/app'
import { QUICKSTART } from './helpers.js'

const TEAM_TASK = 'As a team, summarize some packages of this repository and review the root package.json.'
const KEEP = ['tools', 'agents', 'demo', 'subagents', 'spawn', 'workspace', 'definitions', 'claude-agents', 'team-agents', 'tool-delegate']

/** The shipped cordis.yml with only the entries in `KEEP` (each entry runs from its `- id:` line to the next). */
function teamConfig(): string {
  const text = readFileSync(join(QUICKSTART, 'cordis.yml'), 'utf8')
  const entries = text.split(/^(?=- id: )/m).slice(1)
  const kept = entries.filter((entry) => KEEP.includes(/^- id: (\S+)/.exec(entry)![1]))
  expect(kept.map((entry) => /^- id: (\S+)/.exec(entry)![1]).sort()).to.deep.equal([...KEEP].sort())
  return kept.join('')
}

describe('quick start: a coordinator with a team of two named agents (cordis.yml, in-process)', function () {
  this.timeout(30_000)
  let dir: string
  let app: App
  let agent: Agent | undefined

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'quickstart-team-'))
    writeFileSync(join(dir, 'cordis.yml'), teamConfig())
    cpSync(join(QUICKSTART, '.claude'), join(dir, '.claude'), { recursive: true })
    process.env.QUICKSTART_DEMO_DELAY = '1'
    app = await startApp(join(dir, 'cordis.yml'))
  })

  after(async () => {
    await agent?.dispose()
    await app?.stop()
    delete process.env.QUICKSTART_DEMO_DELAY
    rmSync(dir, { recursive: true, force: true })
  })

  it('defines the reviewer from its Claude Code file and the researcher and coordinator from cordis.yml', () => {
    const definitions = app.ctx.get('agentDefinitions')!
    expect(definitions.list().map((d) => d.name)).to.deep.equal(['coordinator', 'researcher', 'reviewer'])
    const reviewer = definitions.get('reviewer')!
    expect(reviewer.source).to.equal(join(dir, '.claude/agents/reviewer.md'))
    // tools: Read, list_files → read_file (the entry's `tools` map), list_files; model: sonnet → demo.
    expect(reviewer.uses).to.deep.equal({ allow: ['read_file', 'list_files'] })
    expect(reviewer.model).to.equal('demo')
    expect(definitions.get('coordinator')!.team).to.deep.equal(['researcher', 'reviewer'])
  })

  it('the model sees the coordinator\'s team by name, picks both members, and merges their answers', async () => {
    const tool = app.ctx.tools.view().list().find((listed) => listed.name === 'delegate')!
    expect((tool.parameters as { properties: { agent: { enum: string[] } } }).properties.agent.enum).to.deep.equal(['researcher', 'reviewer'])
    expect(tool.description).to.include('- researcher: Reads package.json files').and.include('- reviewer: Reviews a file of the workspace')
    const ends: Array<{ label?: string; stopReason: string }> = []
    app.ctx.on('subagent/end', (info, outcome) => { ends.push({ label: info.label, stopReason: outcome.stopReason }) })
    agent = app.ctx.agents.create({ label: 'main' })
    const result = await agent.run(TEAM_TASK, { signal: new AbortController().signal })
    expect(result.stopReason).to.equal('completed')
    expect(ends.map((end) => `${end.label}:${end.stopReason}`).sort()).to.deep.equal(['Review the root package.json:completed', 'Summarize three packages:completed'])
    const rootName = (JSON.parse(readFileSync(join(QUICKSTART, '../../package.json'), 'utf8')) as { name: string }).name
    expect(result.text).to.match(/^From the researcher:\n- @cordis-subagents\/\S+: /)
    // The reviewer ran with the soul of its agent file, and read the real root package.json.
    expect(result.text).to.include(`From the reviewer:\nreviewer (soul from .claude/agents/reviewer.md): ${rootName} has `)
  })

  it('hot reload: loader.update() on the definitions entry re-derives the team tool; restoring it restores the team', async () => {
    type Entry = { options: { config: { agents: Record<string, unknown> } } }
    const loader = app.loader as unknown as { resolve(id: string): Entry; update(id: string, patch: unknown): Promise<void> }
    const enumOf = () => {
      const tool = app.ctx.tools.view().list().find((listed) => listed.name === 'delegate')
      return (tool?.parameters as { properties: { agent: { enum: string[] } } } | undefined)?.properties.agent.enum
    }
    const config = loader.resolve('team-agents').options.config
    const coordinator = config.agents.coordinator as Record<string, unknown>
    await loader.update('team-agents', { config: { ...config, agents: { ...config.agents, coordinator: { ...coordinator, team: ['reviewer'] } } } })
    await settle(app.ctx)
    expect(enumOf()).to.deep.equal(['reviewer'])
    expect(app.ctx.get('agentDefinitions')!.get('researcher')).to.not.equal(undefined)
    await loader.update('team-agents', { config })
    await settle(app.ctx)
    expect(enumOf()).to.deep.equal(['researcher', 'reviewer'])
  })
})
