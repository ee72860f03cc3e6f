/// <reference types="mocha" />
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as Definitions from '@cordis-subagents/definitions'
import * as Agents from '@cordis-subagents/definitions/agents'
import { codeOf, type DefinitionsApp, FAILED, startApp } from './app.js'

describe('definitions: agents from a config entry', () => {
  let app: DefinitionsApp

  beforeEach(async () => { app = await startApp() })
  afterEach(async () => { await app.stop() })

  it('the entries have the loader\'s plugin shapes', () => {
    expect(Definitions.default).to.equal(Definitions.AgentDefinitions)
    expect(Agents).to.not.have.property('default')
    expect(Agents.name).to.equal('agent-definitions-agents')
    expect(Agents.reusable).to.equal(true)
    expect(Agents.inject).to.deep.equal(['agentDefinitions'])
    // Omitted options add no keys (no `uses: { allow: [] }` that would hide every tool).
    expect(Agents.Config({ agents: { a: { does: 'x' } } })).to.deep.equal({ agents: { a: { does: 'x', team: [], provider: 'spawn' } }, teamWait: 10_000 })
  })

  it('registers every field, reads soulFile (an AGENTS.md) relative to the config folder, and sorts teams', async () => {
    writeFileSync(join(app.dir, 'AGENTS.md'), '# Researcher\nFind facts and cite them.\n')
    await app.load(Agents, {
      agents: {
        researcher: { does: 'Finds facts.', soulFile: 'AGENTS.md', uses: { allow: ['read_file'] }, model: 'demo:small', budget: { maxSteps: 4 } },
        writer: { does: 'Writes   prose.', soul: 'You write.', provider: 'fork' },
        coordinator: { does: 'Plans and delegates.', team: ['writer', 'researcher'] },
      },
    })
    const defs = app.ctx.agentDefinitions
    expect(defs.list().map((d) => d.name)).to.deep.equal(['coordinator', 'researcher', 'writer'])
    const researcher = defs.get('researcher')!
    expect(researcher.soul).to.equal('# Researcher\nFind facts and cite them.\n')
    expect(researcher.soulFile).to.equal(join(app.dir, 'AGENTS.md'))
    expect(researcher).to.include({ does: 'Finds facts.', model: 'demo:small', provider: 'spawn', source: 'config' })
    expect(researcher.uses).to.deep.equal({ allow: ['read_file'] })
    expect(researcher.budget).to.deep.equal({ maxSteps: 4 })
    expect(defs.get('writer')).to.include({ does: 'Writes prose.', soul: 'You write.', provider: 'fork' })
    expect(defs.get('coordinator')!.team).to.deep.equal(['researcher', 'writer'])
    expect(defs.team('coordinator').map((d) => d.name)).to.deep.equal(['researcher', 'writer'])
    expect(defs.reachable('coordinator').map((d) => d.name)).to.deep.equal(['coordinator', 'researcher', 'writer'])
    expect(Object.isFrozen(researcher)).to.equal(true)
  })

  it('a reload replaces the entry\'s agents, an unload removes them, and each tells listeners', async () => {
    const changes: string[][] = []
    app.ctx.on('agent-definitions/changed', (names) => { changes.push(names) })
    const fork = await app.load(Agents, { agents: { a: { does: 'A.' }, b: { does: 'B.' } } })
    fork.update({ agents: { a: { does: 'A again.' }, c: { does: 'C.' } } })
    await app.ctx.lifecycle.flush()
    expect(app.ctx.agentDefinitions.list().map((d) => [d.name, d.does])).to.deep.equal([['a', 'A again.'], ['c', 'C.']])
    fork.dispose()
    expect(app.ctx.agentDefinitions.list()).to.deep.equal([])
    expect(changes).to.deep.equal([['a', 'b'], ['a', 'b'], ['a', 'c'], ['a', 'c']])
  })

  it('an unknown team member fails the entry with UNKNOWN_TEAM_MEMBER naming the agents there are', async () => {
    await app.load(Agents, { agents: { reviewer: { does: 'Reviews.' } } })
    const fork = await app.load(Agents, { agents: { lead: { does: 'Leads.', team: ['reviewer', 'ghost'] }, helper: { does: 'Helps.' } }, teamWait: 0 })
    expect(fork.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('UNKNOWN_TEAM_MEMBER')
    expect(String(app.errors.at(-1))).to.include('"ghost"').and.include('defined: helper, lead, reviewer')
    // All or none: the entry's good agent is not defined either.
    expect(app.ctx.agentDefinitions.list().map((d) => d.name)).to.deep.equal(['reviewer'])
  })

  it('entries load in any order: a team waits (teamWait) for members another entry defines, then fails loudly', async () => {
    // Not flushed: the entry's apply is waiting (the lifecycle would wait for it).
    const lead = app.ctx.plugin(Agents, { agents: { lead: { does: 'Leads.', team: ['reviewer'] } } })
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(app.ctx.agentDefinitions.get('lead')).to.equal(undefined)
    await app.load(Agents, { agents: { reviewer: { does: 'Reviews.' } } })
    await eventually(() => app.ctx.agentDefinitions.get('lead'), 'the lead defined once its member was')
    expect(lead.status).to.not.equal(FAILED)
    const waiting = app.ctx.plugin(Agents, { agents: { boss: { does: 'Bosses.', team: ['ghost'] } }, teamWait: 30 })
    await eventually(() => waiting.status === FAILED, 'the entry failed after its wait')
    expect(codeOf(app.errors)).to.equal('UNKNOWN_TEAM_MEMBER')
    // An entry disposed while it waits defines nothing and reports nothing.
    const errors = app.errors.length
    const gone = app.ctx.plugin(Agents, { agents: { quitter: { does: 'Quits.', team: ['ghost'] } } })
    gone.dispose()
    await app.load(Agents, { agents: { ghost: { does: 'Haunts.' } } })
    expect(app.ctx.agentDefinitions.get('quitter')).to.equal(undefined)
    expect(app.errors.length).to.equal(errors)
  })

  it('a config edit while the entry waits for a member: the old apply ends quietly, the new one defines the team once the member comes', async () => {
    const errors = app.errors.length
    const lead = app.ctx.plugin(Agents, { agents: { chief: { does: 'Leads.', team: ['scout'] } } })
    await new Promise((resolve) => setTimeout(resolve, 5))
    // The loader applies an edited entry by restarting its scope: the waiting apply must not go on under the new one.
    lead.update({ agents: { chief: { does: 'Leads, edited.', team: ['scout'] } } })
    await new Promise((resolve) => setTimeout(resolve, 5))
    await app.load(Agents, { agents: { scout: { does: 'Scouts.' } } })
    await eventually(() => app.ctx.agentDefinitions.get('chief'), 'the edited chief defined once its member was')
    expect(app.ctx.agentDefinitions.get('chief')!.does).to.equal('Leads, edited.')
    expect(lead.status).to.not.equal(FAILED)
    expect(app.errors.slice(errors)).to.deep.equal([])
  })

  it('an unbounded team cycle fails with TEAM_CYCLE; a budget.maxDepth on the cycle bounds it', async () => {
    const bad = await app.load(Agents, { agents: { a: { does: 'A.', team: ['b'] }, b: { does: 'B.', team: ['a'] } } })
    expect(bad.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('TEAM_CYCLE')
    expect(String(app.errors.at(-1))).to.include('a → b → a')
    const self = await app.load(Agents, { agents: { loop: { does: 'Loops.', team: ['loop'] } } })
    expect(self.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('TEAM_CYCLE')
    const bounded = await app.load(Agents, { agents: { a: { does: 'A.', team: ['b'] }, b: { does: 'B.', team: ['a'], budget: { maxDepth: 2 } } } })
    expect(bounded.status).to.not.equal(FAILED)
    expect(app.ctx.agentDefinitions.reachable('a').map((d) => d.name)).to.deep.equal(['a', 'b'])
  })

  it('a missing soul file fails with SOUL_FILE; a taken name with DUPLICATE_AGENT; a bad field with INVALID_DEFINITION', async () => {
    const missing = await app.load(Agents, { agents: { a: { does: 'A.', soulFile: 'nope/AGENTS.md' } } })
    expect(missing.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('SOUL_FILE')
    expect(String(app.errors.at(-1))).to.include(join(app.dir, 'nope/AGENTS.md'))
    await app.load(Agents, { agents: { a: { does: 'A.' } } })
    const duplicate = await app.load(Agents, { agents: { a: { does: 'Another A.' } } })
    expect(duplicate.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('DUPLICATE_AGENT')
    expect(app.ctx.agentDefinitions.get('a')!.does).to.equal('A.')
    const both = await app.load(Agents, { agents: { b: { does: 'B.', soul: 'x', soulFile: 'AGENTS.md' } } })
    expect(both.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('INVALID_DEFINITION')
    const emptyUses = await app.load(Agents, { agents: { c: { does: 'C.', uses: {} } } })
    expect(emptyUses.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('INVALID_DEFINITION')
  })

  it('budgetNote and tellParent are kept on the definition; a value that is not true or false fails the load', async () => {
    await app.load(Agents, { agents: { noted: { does: 'Noted.', budgetNote: true, tellParent: false } } })
    expect(app.ctx.agentDefinitions.get('noted')).to.include({ budgetNote: true, tellParent: false })
    const bad = await app.load(Agents, { agents: { odd: { does: 'Odd.', budgetNote: 'yes' as unknown as boolean } } })
    expect(bad.status).to.equal(FAILED)
    expect(String(app.errors.at(-1))).to.include('$.agents.odd.budgetNote expected boolean')
    expect(app.ctx.agentDefinitions.get('odd')).to.equal(undefined)
    // The same rule for a definition checked without the config schema (an agent file, a host's own code).
    expect(() => Definitions.checkDefinition('odd', { does: 'Odd.', tellParent: 1 as unknown as boolean }, 'code', app.dir))
      .to.throw('`tellParent` is true or false').with.property('code', 'INVALID_DEFINITION')
  })

  it('an output schema is kept on the definition; a bad one fails the load with INVALID_OUTPUT_SCHEMA naming the agent', async () => {
    const schema = { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'] }
    await app.load(Agents, { agents: { judge: { does: 'Judges.', output: { schema, maxCorrections: 1 } } } })
    expect(app.ctx.agentDefinitions.get('judge')!.output).to.deep.equal({ schema, maxCorrections: 1 })
    const bad = await app.load(Agents, { agents: { loose: { does: 'Loose.', output: { schema: { type: 'string' } } } } })
    expect(bad.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('INVALID_OUTPUT_SCHEMA')
    expect(String(app.errors.at(-1))).to.include('Agent "loose" (config): output')
    expect(app.ctx.agentDefinitions.get('loose')).to.equal(undefined)
  })
})
