// The market plugin in a Koishi 4.18 App (in-process, as test/koishi.spec.ts explains): the sections it
// composes, a refused section confined to itself, a component failing in its own scope, and a config
// update that reloads only the sections whose value changed.
import { expect } from 'chai'
import { App } from '@koishijs/core'
import { type Context, Logger, Schema } from 'cordis'
import { ScriptedModel } from '@cordis-subagents/agent'
import SQLiteDriver from '@minatojs/driver-sqlite'
import * as market from '@cordis-subagents/koishi-plugin-subagents'

const added: Logger.Target[] = []

/** What the App logs (Koishi logs a failed plugin's error; the package logs a refused section), while a test runs. */
function logsOf(): string[] {
  const lines: string[] = []
  const target = { colors: 0, showTime: '', print: (text: string) => void lines.push(text), levels: { base: 3 } } as unknown as Logger.Target
  Logger.targets.push(target)
  added.push(target)
  return lines
}

async function start(config: Record<string, unknown>, database = false) {
  const app = new App()
  const logs = logsOf()
  // Koishi's own database service on SQLite in memory, as a database-sqlite plugin gives a Koishi app.
  if (database) (app as unknown as Context).plugin(SQLiteDriver as never, { path: ':memory:' })
  const errors = () => logs.filter((line) => line.startsWith('[E]'))
  const fork = (app as unknown as Context).plugin(market as never, config)
  await app.start()
  await app.lifecycle.flush()
  return { app, errors, fork, logs }
}

const toolNames = (app: App) => app.tools.list().map((tool) => tool.name).sort()
const providers = (app: App) => app.subagents.list().map((provider) => provider.name).sort()

describe('koishi-plugin-subagents in a Koishi 4.18 App', function () {
  this.timeout(20_000)
  let app: App | undefined

  afterEach(async () => {
    await app?.stop()
    app = undefined
    for (const target of added.splice(0)) Logger.targets.splice(Logger.targets.indexOf(target), 1)
  })

  it('loads every default section: services, the model, spawn and fork with their tools; optional sections stay off', async () => {
    const started = await start({ model: { apiKey: '', baseURL: 'http://127.0.0.1:9/v1' } })
    app = started.app
    expect(started.errors()).to.deep.equal([])
    expect(toolNames(app)).to.deep.equal(['subagent', 'subagent_fork'])
    expect(providers(app)).to.deep.equal(['fork', 'spawn'])
    expect(app.agents.modelNames()).to.deep.equal(['openai'])
    expect((app as unknown as { checkpoints?: unknown }).checkpoints).to.equal(undefined)
  })

  it('composes the chat (its `subagents` commands) on by default; with the section off there are none', async () => {
    const started = await start({ model: { enabled: false } })
    app = started.app
    expect(started.errors()).to.deep.equal([])
    const commands = () => app!.$commander._commandList.map((command) => command.name)
    expect(commands()).to.include.members(['subagents', 'subagents.run', 'subagents.answer', 'subagents.cancel'])
    // The page needs Koishi's console (its `console` service): without one it waits, and nothing is served.
    expect((app as unknown as { subagentChat?: unknown }).subagentChat).to.not.equal(undefined)
    await app.stop()
    const off = await start({ model: { enabled: false }, chat: { enabled: false } })
    app = off.app
    expect(commands()).to.not.include('subagents')
    expect((app as unknown as { subagentChat?: unknown }).subagentChat).to.equal(undefined)
  })

  it('runs a delegation through the composed `subagent` tool', async () => {
    const started = await start({ model: { enabled: false }, agents: { model: 'scripted' } })
    app = started.app
    const dispose = app.agents.registerModel('scripted', new ScriptedModel((request) => {
      const last = request.messages.at(-1)!
      if (request.messages.find((m) => m.role === 'user')!.content === 'child task') return { text: 'child says hi' }
      return last.role === 'tool' ? { text: `parent got: ${last.content}` } : ScriptedModel.call('subagent', { description: 'greet', prompt: 'child task' })
    }))
    const agent = app.agents.create()
    try {
      const result = await agent.run('go')
      expect(result.stopReason).to.equal('completed')
      expect(result.text).to.equal('parent got: child says hi')
    } finally {
      await agent.dispose()
      dispose()
    }
  })

  it('the checkpoints section stores delegations in Koishi\'s database', async () => {
    const started = await start({ model: { enabled: false }, agents: { model: 'scripted' }, checkpoints: { enabled: true } }, true)
    app = started.app
    expect(started.errors()).to.deep.equal([])
    const dispose = app.agents.registerModel('scripted', new ScriptedModel((request) => {
      if (request.messages.find((m) => m.role === 'user')!.content === 'child task') return { text: 'stored' }
      return request.messages.at(-1)!.role === 'tool' ? { text: 'done' } : ScriptedModel.call('subagent', { description: 'kept', prompt: 'child task' })
    }))
    const agent = app.agents.create()
    try {
      expect((await agent.run('go')).stopReason).to.equal('completed')
    } finally {
      await agent.dispose()
      dispose()
    }
    type Store = { drain(): Promise<void>, list(): Promise<{ state: string, provider: string, stopReason?: string }[]> }
    const checkpoints = (app as unknown as { checkpoints: Store }).checkpoints
    await checkpoints.drain()
    const runs = await checkpoints.list()
    expect(runs.map((run) => `${run.provider}:${run.state}:${run.stopReason}`)).to.deep.equal(['spawn:settled:completed'])
  })

  it('a section its component refuses fails loudly with SECTION_INVALID; the other sections run', async () => {
    const started = await start({ model: { enabled: false }, subagent: { toolName: 'not a name!' } })
    app = started.app
    expect(started.errors().join('\n')).to.match(/section subagent \(subagent-tool\) is refused \(SECTION_INVALID\): .*toolName/)
    expect(toolNames(app)).to.deep.equal(['subagent_fork'])
    expect(providers(app)).to.deep.equal(['fork', 'spawn'])
    // The whole plugin is not failed: its own scope is active.
    expect(started.fork.status).to.not.equal(3)
  })

  it('a section shows its component\'s own schema: a group the component leaves unset stays unset, given empty it reaches the component', async () => {
    const shown = JSON.stringify(market.Config.toJSON())
    expect(shown).to.include('"agentOptions"')
    // An explicit empty toolFilter is the component's to refuse (it hides nothing by mistake): the section passes it on.
    const started = await start({ model: { enabled: false }, subagent: { toolFilter: {}, toolName: 'subagent' } })
    app = started.app
    expect(started.errors().join('\n')).to.match(/toolFilter is empty/)
    expect(toolNames(app)).to.deep.equal(['subagent_fork'])
  })

  it('the console\'s own check before a save (the schema rebuilt from its JSON, as the browser does) accepts the form\'s values', () => {
    const rebuilt = new Schema(JSON.parse(JSON.stringify(market.Config.toJSON())) as Schema)
    // The defaults, with acp (whose `command` is required) off; the groups left unset, as the form saves them.
    expect(() => rebuilt({})).to.not.throw()
    expect(() => rebuilt({ acp: { enabled: false }, subagent: { toolName: 'delegate' } })).to.not.throw()
    expect(rebuilt({ subagent: { toolName: 'delegate' } }).subagent).to.not.have.any.keys('agentOptions', 'toolFilter', 'budget', 'output')
    expect(rebuilt({ model: { enabled: false } }).model).to.deep.equal({ enabled: false })
  })

  it('a component that fails while loading fails in its own scope (its error logged); the other sections run', async () => {
    // The schema accepts a baseURL with a fragment; model-openai refuses it when it loads (INVALID_CONFIG).
    const started = await start({ model: { apiKey: '', baseURL: 'http://127.0.0.1:9/v1#frag' } })
    app = started.app
    expect(started.errors().join('\n')).to.match(/model-openai/)
    expect(app.agents.modelNames()).to.deep.equal([])
    expect(toolNames(app)).to.deep.equal(['subagent', 'subagent_fork'])
  })

  it('a config update reloads only the changed sections: renaming the tool keeps fork, turning fork off removes only it', async () => {
    const started = await start({ model: { enabled: false } })
    app = started.app
    const forkProvider = app.subagents.list().find((provider) => provider.name === 'fork')
    started.fork.update({ model: { enabled: false }, subagent: { toolName: 'delegate' } })
    await app.lifecycle.flush()
    expect(toolNames(app)).to.deep.equal(['delegate', 'subagent_fork'])
    // fork's section did not change, so its provider is the same object (not reloaded).
    expect(app.subagents.list().find((provider) => provider.name === 'fork')).to.equal(forkProvider)
    started.fork.update({ model: { enabled: false }, subagent: { toolName: 'delegate' }, fork: { enabled: false } })
    await app.lifecycle.flush()
    expect(toolNames(app)).to.deep.equal(['delegate'])
    expect(providers(app)).to.deep.equal(['spawn'])
    // A refused value, then a fixed one: the section recovers with no restart of the rest.
    started.fork.update({ model: { enabled: false }, subagent: { toolName: 'bad name' }, fork: { enabled: false } })
    await app.lifecycle.flush()
    expect(toolNames(app)).to.deep.equal([])
    started.fork.update({ model: { enabled: false }, subagent: { toolName: 'subagent' }, fork: { enabled: true } })
    await app.lifecycle.flush()
    expect(toolNames(app)).to.deep.equal(['subagent', 'subagent_fork'])
    expect(started.errors().filter((error) => /refused/.test(error))).to.have.length(1)
  })
})
