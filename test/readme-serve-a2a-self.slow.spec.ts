// The root README's cordis.yml snippet of an app that serves its agent over A2A and delegates to itself, loaded as
// written by the real @cordisjs/loader (read from README.md, so the doc cannot drift from what is tested). Around it,
// only what any such app has: tools, agents with a model, the subagents service before it, and a subagent-tool on its
// `remote` provider after it. A delegation crosses HTTP to the app's own served agent with the generated token, and
// the start logs no inject warning ("property a2aServer is not registered"), which a user copying it would see.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type {} from '@cordis-subagents/serve-a2a'
import { REMOTE_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { type App, settle, startApp } from '@cordis-subagents/quickstart/app'
import { eventually, ROOT } from './helpers.js'
import { captureLogs } from './support/logs.js'

/** The ```yaml block of README.md that loads serve-a2a and a provider-a2a pointed at it. */
function readmeSnippet(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1]!)
  const serves = (block: string) => block.includes("'@cordis-subagents/serve-a2a'") && block.includes("'@cordis-subagents/provider-a2a'")
  const found = blocks.filter(serves)
  expect(found, 'README.md has one yaml block that loads serve-a2a and provider-a2a').to.have.length(1)
  return found[0]!
}

/** What the snippet needs before it (an agent host) and after it (a tool on its `remote` provider). */
const BEFORE = `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: demo
    cwd: ${JSON.stringify(ROOT)}
- id: demo
  name: '@cordis-subagents/quickstart/demo-model'
  config:
    name: demo
    delay: 1
- id: workspace
  name: '@cordis-subagents/quickstart/workspace-tools'
  config:
    root: ${JSON.stringify(ROOT)}
- id: subagents
  name: '@cordis-subagents/subagents-service'
`
const AFTER = `- id: tool-subagent-remote
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: remote
    toolName: subagent_remote
`

describe('README: an app that serves its agent over A2A and delegates to itself (cordis.yml snippet as written)', function () {
  this.timeout(60_000)
  let dir: string
  let app: App | undefined
  let logs: ReturnType<typeof captureLogs> | undefined

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'readme-serve-a2a-'))
  })
  afterEach(async () => {
    await app?.stop()
    app = undefined
    logs?.restore()
    logs = undefined
    rmSync(dir, { recursive: true, force: true })
  })

  /** The README's block between the entries it needs, in a cordis.yml started by the loader; logs recorded from before the start. */
  async function startSnippet(): Promise<App> {
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, `${BEFORE}${readmeSnippet()}${AFTER}`)
    logs = captureLogs()
    app = await startApp(file, { timeout: 30_000 })
    return app
  }

  it('starts without an inject warning, and a delegation to the served agent completes over HTTP with its token', async () => {
    const { ctx } = await startSnippet()
    expect(ctx.a2aServer.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(ctx.subagents.list().map((p) => p.name)).to.deep.equal(['remote'])
    const result = await delegate(ctx)
    expect(result.content).to.match(/directories: .*packages/)
    expect(ctx.a2aServer.storedTasks, 'the task ran on this app\'s own server').to.equal(1)
    expectQuiet(logs!)
  })

  it('the server restarted (disabled, enabled again): the entry stops with it, then reads its new token, quietly', async () => {
    const { ctx, loader } = await startSnippet()
    const firstToken = ctx.a2aServer.token
    const provider = () => ctx.subagents.list().find((p) => p.name === 'remote')
    expect(provider(), 'the remote provider at start').to.not.equal(undefined)
    await loader.update('a2a', { disabled: true })
    expect(await eventually(() => !ctx.get('a2aServer')), 'the server stopped').to.equal(true)
    expect(await eventually(() => !provider()), 'the remote entry stopped with the server').to.equal(true)
    await loader.update('a2a', { disabled: null })
    await settle(ctx)
    await ctx.subagents.ready('remote', { timeout: 20_000 })
    // A new token for the new start: the delegation below is refused unless the entry evaluated its config again.
    expect(ctx.a2aServer.token).to.be.a('string').and.not.equal(firstToken)
    await delegate(ctx)
    expect(ctx.a2aServer.storedTasks, 'the task ran on the restarted server').to.equal(1)
    expectQuiet(logs!)
  })
})

/** One `subagent_remote` call of a fresh parent agent: completed on provider `remote`. */
async function delegate(ctx: App['ctx']) {
  const parent = ctx.agents.create({ label: 'parent' })
  try {
    const prompt = `${REMOTE_PROMPT} (list_files on ".").`
    const result = await parent.tools.execute(
      { id: 'call-1', name: 'subagent_remote', input: { description: 'remote listing', prompt } },
      { signal: new AbortController().signal, agent: parent } as never,
    )
    expect(result.isError, result.content).to.not.equal(true)
    expect(result.metadata).to.include({ provider: 'remote', stopReason: 'completed' })
    return result
  } finally {
    await parent.dispose()
  }
}

/** Debug lines were recorded (so a silenced logger cannot pass), and no inject warning or error among them. */
function expectQuiet(logs: ReturnType<typeof captureLogs>) {
  const records = logs.records.map((record) => `[${record.type}] ${record.name}: ${record.content}`)
  expect(records.some((line) => line.startsWith('[debug] ')), records.join('\n')).to.equal(true)
  expect(records.filter((line) => line.includes('is not registered') || line.startsWith('[error] ')), records.join('\n')).to.deep.equal([])
}
