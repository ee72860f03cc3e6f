// The control verbs as the second plugin entry of subagent-tool, through the real @cordisjs/loader
// reading a real cordis.yml: `@cordis-subagents/subagent-tool/control` loads beside the tool, and the
// deprecated name `@cordis-subagents/subagent-control` still loads the same plugin (another prefix).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type App, startApp } from '@cordis-subagents/quickstart/app'

const CONFIG = `
- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: spawn
  name: '@cordis-subagents/provider-spawn'
- id: tool-subagent-bg
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
    toolName: subagent_bg
    mode: background
- id: control
  name: '@cordis-subagents/subagent-tool/control'
- id: control-old-name
  name: '@cordis-subagents/subagent-control'
  config:
    prefix: old
`

const VERBS = ['cancel', 'continue', 'reply', 'result', 'send', 'status', 'wait']

describe('cordis.yml through @cordisjs/loader: subagent-tool/control, the second entry of subagent-tool', function () {
  this.timeout(30_000)
  let dir: string
  let app: App

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'control-loader-'))
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, CONFIG)
    app = await startApp(file)
  })

  after(async () => {
    await app?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('loads the tool and the control entry (and its deprecated name) from their package names; each registers its verbs', () => {
    const entries = [...app.loader.entries()]
    const control = entries.find((entry) => entry.options.id === 'control')!
    const old = entries.find((entry) => entry.options.id === 'control-old-name')!
    expect(control.fork, 'the control entry has a fork').to.not.equal(undefined)
    expect(old.fork, 'the deprecated name has a fork').to.not.equal(undefined)
    expect(control.fork!.runtime.plugin, 'the same plugin under both names').to.equal(old.fork!.runtime.plugin)
    expect(app.ctx.tools.list().map((tool) => tool.name).sort()).to.deep.equal([
      ...VERBS.map((verb) => `old_${verb}`), 'subagent_bg', ...VERBS.map((verb) => `subagent_${verb}`),
    ])
  })
})
