// Shared by the background-delegation specs (test code only): a host with the tool in background
// mode over a scripted provider, the control verbs, and a scripted parent agent.
import type { Context, ForkScope } from 'cordis'
import { type Agent, type AgentEvent, ScriptedModel, type ScriptedReply } from '@cordis-subagents/agent'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { loadProvider, loadTool, ProviderControl } from '../../packages/subagent-tool/tests/helpers.js'
import { startHost, type Host, type HostOptions } from './host.js'

export { ProviderControl, loadTool }

/**
 * The kit's provider, extended with `send` on every run (the provider side of steering is not
 * ours to build): each message lands in `sent`, and a run that ended refuses it like a real one.
 */
export class SteerableProvider extends ProviderControl {
  readonly sent: { runId: string; message: string }[] = []

  constructor() {
    super()
    this.onRun = (fake) => {
      Object.assign(fake.run, {
        send: (message: string) => {
          if (fake.outcome.settled) throw new Error('the run has ended')
          this.sent.push({ runId: fake.request.runId, message })
        },
      } satisfies Pick<SubagentRun, 'send'>)
    }
  }
}

export interface BackgroundHost extends Host {
  provider: ProviderControl
  providerFork: ForkScope
  toolFork: ForkScope
  controlFork: ForkScope
}

/** A host with provider `fake`, the `subagent` tool on it in background mode, and the control verbs. */
export async function backgroundHost(options: {
  tool?: Record<string, unknown>
  tools?: HostOptions['tools']
  subagents?: HostOptions['subagents']
  provider?: ProviderControl
  control?: Record<string, unknown>
} = {}): Promise<BackgroundHost> {
  const host = await startHost({ subagents: options.subagents, tools: options.tools, captureLogs: true })
  const provider = options.provider ?? new ProviderControl()
  const providerFork = await loadProvider(host.ctx, provider, { name: 'fake' })
  const toolFork = await loadTool(host.ctx, { provider: 'fake', mode: 'background', ...options.tool })
  const controlFork = host.ctx.plugin(SubagentControl as any, options.control ?? {})
  await host.ctx.lifecycle.flush()
  return { ...host, provider, providerFork, toolFork, controlFork }
}

let models = 0

/** A real parent agent driven by a `ScriptedModel` under a fresh model name. */
export function scriptedParent(
  ctx: Context, script: ScriptedReply[] | ((request: any, index: number) => any), options: { maxSteps?: number } = {},
): { agent: Agent; model: ScriptedModel } {
  const model = new ScriptedModel(script as ScriptedReply[])
  const name = `parent-model-${++models}`
  ctx.agents.registerModel(name, model)
  return { agent: ctx.agents.create({ model: name, label: 'parent', ...options }), model }
}

export function start(label: string, prompt = `Task: ${label}`) {
  return { name: 'subagent', input: { description: label, prompt } }
}

/** The tool results and user messages of a model request, as `role: text` lines (for assertions). */
export function tail(request: { messages: readonly { role: string; content: string; name?: string }[] }, count: number): string[] {
  return request.messages.slice(-count).map((m) => `${m.role}${m.name ? `(${m.name})` : ''}: ${m.content}`)
}

export function events(list: AgentEvent[], type: AgentEvent['type']): AgentEvent[] {
  return list.filter((event) => event.type === type)
}
