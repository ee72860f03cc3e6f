// The quick start's tracing plugin (what its ACP agent loads, acp-agent.yml) takes the telemetry
// plugin's own options (issue 45 item 7): `flatAttributes: true` there flattens the array attributes
// of the spans it exports, as it does on the telemetry plugin itself.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { ScriptedModel } from '@cordis-subagents/agent'
import * as tracingPlugin from '@cordis-subagents/quickstart/tracing-plugin'
import { eventually } from './helpers.js'
import { startHost } from './support/host.js'

describe('the quick start\'s tracing plugin passes the telemetry options on', function () {
  this.timeout(20_000)
  let dir: string
  let saved: string | undefined

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tracing-options-'))
    saved = process.env.QUICKSTART_TRACE_FILE
  })

  afterEach(() => {
    if (saved === undefined) delete process.env.QUICKSTART_TRACE_FILE
    else process.env.QUICKSTART_TRACE_FILE = saved
    rmSync(dir, { recursive: true, force: true })
  })

  async function finishReasons(config: Record<string, unknown>): Promise<unknown> {
    const file = join(dir, `${Object.keys(config).length}.jsonl`)
    process.env.QUICKSTART_TRACE_FILE = file
    const host = await startHost({
      agents: { model: 'script' },
      before(ctx) {
        ctx.plugin({ name: 'script-model', inject: ['agents'], apply: (ctx) => { ctx.agents.registerModel('script', new ScriptedModel(() => ({ text: 'done' }))) } })
        ctx.plugin(tracingPlugin, { service: 'options-test', ...config })
      },
    })
    try {
      // The plugin loads the telemetry plugin once its tracer provider has started.
      expect(await eventually(() => !!host.ctx.get('telemetry'), 10_000), 'telemetry loaded').to.equal(true)
      const agent = host.ctx.agents.create({})
      await agent.run('hello')
      await agent.dispose()
    } finally {
      await host.stop()
    }
    const chat = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { name: string; attributes: Record<string, unknown> })
      .find((span) => span.name.startsWith('chat '))
    expect(chat, 'a chat span').to.not.equal(undefined)
    return chat!.attributes['gen_ai.response.finish_reasons']
  }

  it('flatAttributes: true joins gen_ai.response.finish_reasons into a string; the default keeps the array', async () => {
    expect(await finishReasons({ flatAttributes: true })).to.equal('stop')
    expect(await finishReasons({})).to.deep.equal(['stop'])
  })
})
