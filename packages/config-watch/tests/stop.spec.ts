// stopLoaderApp against the real loader: every entry stopped, the config file untouched, no error.
import { readFileSync, rmSync } from 'node:fs'
import { expect } from 'chai'
import { Logger } from 'cordis'
import { stopLoaderApp } from '@cordis-subagents/config-watch'
import { appConfig, startTestApp } from './app.js'

describe('stopLoaderApp', function () {
  this.timeout(60_000)

  /** Everything logged at any level while `run` runs (the loader logs internal errors this way). */
  async function logsOf(run: () => Promise<void>): Promise<string[]> {
    const lines: string[] = []
    const target = { colors: 0, showTime: '', print: (text: string) => void lines.push(text), levels: { base: 3 } } as unknown as Logger.Target
    Logger.targets.push(target)
    try {
      await run()
    } finally {
      Logger.targets.splice(Logger.targets.indexOf(target), 1)
    }
    return lines
  }

  it('stops every entry, leaves cordis.yml byte for byte, and logs no error', async () => {
    const app = await startTestApp()
    const text = readFileSync(app.file, 'utf8')
    const entries = [...app.ctx.loader.entries()]
    const errors: unknown[] = []
    app.ctx.on('internal/error', (error) => void errors.push(error))
    const logs = await logsOf(() => stopLoaderApp(app.ctx))
    // The write-back the loader would schedule runs on a timer: give it one.
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(logs.filter((line) => /error|TypeError/i.test(line))).to.deep.equal([])
    expect(errors).to.deep.equal([])
    expect(entries.filter((entry) => entry.fork).map((entry) => entry.options.id)).to.deep.equal([])
    expect(app.ctx.get('tools')).to.equal(undefined)
    expect(readFileSync(app.file, 'utf8')).to.equal(text)
    rmSync(app.dir, { recursive: true, force: true })
  })

  it('finishes a write-back the loader scheduled just before (ctx.loader.update, not awaited)', async () => {
    const app = await startTestApp(appConfig({ watch: false }))
    void app.ctx.loader.update('fork', { config: { name: 'fork', description: 'updated just before the stop' } })
    await stopLoaderApp(app.ctx)
    const text = readFileSync(app.file, 'utf8')
    expect(text).to.include('updated just before the stop')
    // Every entry is still there, none marked disabled.
    for (const id of ['tools', 'agents', 'subagents', 'spawn', 'fork', 'tool-subagent', 'tool-subagent-fork']) expect(text).to.include(`id: ${id}\n`)
    expect(text).to.not.include('disabled')
    rmSync(app.dir, { recursive: true, force: true })
  })

  it('is ctx.stop() for a context without a loader', async () => {
    const { Context } = await import('cordis')
    const ctx = new Context()
    let disposed = false
    ctx.plugin({ name: 'probe', apply: (inner: typeof ctx) => void inner.on('dispose', () => void (disposed = true)) })
    await ctx.start()
    await stopLoaderApp(ctx)
    expect(disposed).to.equal(true)
  })
})
