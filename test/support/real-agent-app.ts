// A cordis.yml app (through the real @cordisjs/loader) whose parent agent delegates to a real ACP
// adapter through provider-acp and the subagent tool, with a scripted parent model.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ScriptedModel } from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/subagents-service'
import { type App, startApp } from '@cordis-subagents/quickstart/app'
import { providerEntry, type RealAgent } from './real-agents.js'
import { processesWithEnv } from './processes-by-env.js'

export interface RealAgentApp {
  app: App
  dir: string
  /** Pids holding the adapter's home in their environment, sampled when each delegation was handed over. */
  seen: Set<number>
  /** `performance.now()` of every `subagent/end` (the run's result settled at the service), in order. */
  endedAt: number[]
  /** Runs the parent: it calls `subagent_acp` with `prompt`, then answers with the tool result verbatim. */
  delegate(prompt: string): Promise<Delegation>
  stop(): Promise<void>
}

interface Delegation {
  text: string
  stopReason: string
  diagnostic?: string
  /** `performance.now()` when the parent's model called `subagent_acp`, and when it was asked again with the result. */
  calledAt: number
  resultAt: number
}

export interface AppOptions {
  /** Entries before provider-acp (e.g. MCP servers). */
  before?: string[]
  /** Lines under provider-acp's `config:`. */
  provider?: string[]
}

export async function startRealAgentApp(agent: RealAgent, options: AppOptions = {}): Promise<RealAgentApp> {
  const dir = mkdtempSync(join(tmpdir(), 'real-adapters-app-'))
  const yml = [
    '- id: tools',
    '  name: \'@cordis-subagents/tools\'',
    '- id: agents',
    '  name: \'@cordis-subagents/agent\'',
    '  config:',
    '    model: parent',
    '- id: subagents',
    '  name: \'@cordis-subagents/subagents-service\'',
    ...options.before ?? [],
    providerEntry(agent, 'acp', [`cwd: ${JSON.stringify(agent.home)}`, ...options.provider ?? []]),
    '- id: tool-acp',
    '  name: \'@cordis-subagents/subagent-tool\'',
    '  config:',
    '    provider: acp',
    '    toolName: subagent_acp',
    '',
  ].join('\n')
  writeFileSync(join(dir, 'cordis.yml'), yml)
  const app = await startApp(join(dir, 'cordis.yml'), { timeout: 60_000 })
  const seen = new Set<number>()
  const endedAt: number[] = []
  app.ctx.on('subagent/start', () => {
    for (const pid of processesWithEnv('HOME', agent.home)) seen.add(pid)
  })
  app.ctx.on('subagent/end', () => { endedAt.push(performance.now()) })
  let stopping: Promise<void> | undefined
  return {
    app,
    dir,
    seen,
    endedAt,
    async delegate(prompt) {
      let calledAt = 0
      let resultAt = 0
      const model = new ScriptedModel([
        () => {
          calledAt = performance.now()
          return ScriptedModel.call('subagent_acp', { description: `ask ${agent.name}`, prompt })
        },
        (request) => {
          resultAt = performance.now()
          return { text: String(request.messages.at(-1)!.content) }
        },
      ])
      const dispose = app.ctx.agents.registerModel('parent', model)
      const parent = app.ctx.agents.create()
      try {
        const result = await parent.run('delegate it')
        const diagnostic = result.diagnostic ? { diagnostic: result.diagnostic } : {}
        return { text: result.text, stopReason: result.stopReason, ...diagnostic, calledAt, resultAt }
      } finally {
        await parent.dispose()
        dispose()
      }
    },
    stop: () => (stopping ??= (async () => {
      await app.stop()
      rmSync(dir, { recursive: true, force: true })
    })()),
  }
}
