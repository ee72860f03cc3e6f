// A Koishi 4.18 App with the real ChatLuna (koishi-plugin-chatluna from npm), a memory database for
// it, the loopback adapter, and our packages. The App is Koishi's CommonJS build, as `koishi start`
// runs it: ChatLuna's ESM entry cannot import koishi under native ESM (koishi.spec.ts says why), so
// Koishi and ChatLuna come from require() while our packages are the ESM the specs import, two
// copies of cordis in one process, as in a Koishi user's app (koishi-yml.slow.spec.ts).
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { eventually } from '@cordis-subagents/test-support'
import { loopbackAdapter } from './loopback-adapter.js'
import type { ScriptedModelServer } from './model-server.js'

const require = createRequire(import.meta.url)

/** The slice of ChatLuna's service the specs drive: its agent API and tool registry. */
interface ChatLunaForSpecs {
  createAgent(options: { model: string; tools: string[]; system?: string; maxSteps?: number }): Promise<{
    generate(input: { prompt: string; signal?: AbortSignal }): Promise<{ output: string; intermediateSteps?: unknown[] }>
  }>
  platform: {
    getTools(): { value: string[] }
    findModel(name: string): { value: unknown }
  }
}

export interface SpecApp {
  app: Context & { chatluna: ChatLunaForSpecs; start(): Promise<void>; stop(): Promise<void> }
  close(): Promise<void>
}

export async function startKoishi(server: ScriptedModelServer): Promise<SpecApp> {
  const baseDir = mkdtempSync(join(tmpdir(), 'chatluna-bridge-'))
  const { App } = require('koishi') as { App: new (config: unknown) => SpecApp['app'] }
  const app = new App({})
  // ChatLuna keeps its presets and temp files under ctx.baseDir (Koishi's loader sets it; here the spec does).
  Object.assign(app, { baseDir })
  app.plugin((require('@koishijs/plugin-database-memory') as { default: never }).default)
  app.plugin(require('koishi-plugin-chatluna') as never, {})
  const adapterFork = app.plugin(loopbackAdapter as never, { platform: 'loopback', endpoint: server.baseURL, models: ['m1'], configMode: 'default', maxRetries: 1, proxyMode: 'off', proxyAddress: '' })
  await app.start()
  await eventually(() => app.chatluna?.platform.findModel('loopback/m1').value, 'ChatLuna lists loopback/m1')
  return {
    app,
    async close() {
      // The adapter first: ChatLuna 1.3.36 logs through a logger it has already cleared when an
      // adapter is uninstalled during its own dispose (a TypeError printed at stop, not ours).
      adapterFork.dispose()
      await app.stop()
      rmSync(baseDir, { recursive: true, force: true })
    },
  }
}
