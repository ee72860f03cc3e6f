import { resolve } from 'node:path'
import { Context, Schema, Service } from 'cordis'
import { type ToolRegistry, type ToolView, untraced } from '@cordis-subagents/tools'
import { Agent, type AgentHost } from './agent.js'
import { AgentError } from './errors.js'
import type { ChatModel, Message } from './types.js'

export * from './types.js'
export * from './errors.js'
export { Agent } from './agent.js'
export { Transcript } from './transcript.js'
export { ScriptedModel, type ScriptedReply, type ScriptedResponse, type ScriptedModelOptions } from './scripted-model.js'
export type { Usage } from '@cordis-subagents/tools'
export { untraced } from '@cordis-subagents/tools'

declare module 'cordis' {
  interface Context {
    agents: AgentRuntime
  }
}

export interface CreateAgentOptions {
  /** Model ref `name` or `name:modelId`. Default: the parent's model, else the configured default. */
  model?: string
  /** System prompt. Default: the configured deployment persona (not the parent's persona). */
  persona?: string
  /** The tools the agent may call. Default: the parent's view, else every registered tool. */
  tools?: ToolView
  parent?: Agent
  /** Messages the agent starts with (completed turns). */
  seed?: readonly Message[]
  cwd?: string
  maxSteps?: number
  maxTokens?: number
  label?: string
}

const MODEL_NAME = /^[A-Za-z0-9_.\-/]{1,64}$/

/**
 * `ctx.agents`: chat models and agents that run the tool-calling loop over `ctx.tools`.
 */
export class AgentRuntime extends Service<AgentRuntime.Config> {
  static inject = ['tools']
  static Config: Schema<AgentRuntime.Config> = Schema.object({
    model: Schema.string().description('Default model ref (`name` or `name:modelId`) for agents that do not name one.'),
    persona: Schema.string().role('textarea').description('Deployment persona: the system prompt of every agent created without its own persona (a child does not inherit its parent\'s persona).'),
    maxSteps: Schema.natural().min(1).default(25).description('Most model calls in one turn before it stops with `max-steps`.'),
    maxTokens: Schema.natural().min(1).description('Output token limit passed to the model per call.'),
    cwd: Schema.string().description('Working directory of root agents (default: the process cwd).'),
    depth: Schema.natural().default(0).description('Depth of root agents. The `SUBAGENT_DEPTH` environment variable overrides it.'),
  })

  private readonly models = new Map<string, ChatModel>()
  /** Captured once: callers of `create` need not inject `tools` themselves. */
  private readonly registry: ToolRegistry
  private readonly host: AgentHost
  private counter = 0
  /** Depth of agents created without a parent. */
  readonly rootDepth: number

  constructor(ctx: Context, config: AgentRuntime.Config = {}) {
    super(ctx, 'agents', true)
    this.config = config
    this.registry = untraced(ctx.tools)
    // Agents call back into the runtime every step; give them the runtime itself, not the
    // caller-tracing proxy that `this` is inside a method called as `ctx.agents.create()`.
    this.host = { resolveModel: (ref) => this.resolveModel(ref) }
    const envDepth = depthFromEnv(process.env.SUBAGENT_DEPTH)
    if (envDepth === null) ctx.logger('agents').warn('ignoring SUBAGENT_DEPTH=%s: not a non-negative integer', process.env.SUBAGENT_DEPTH)
    this.rootDepth = envDepth ?? config.depth ?? 0
  }

  /** Registers a model in the caller's scope. Throws `INVALID_MODEL` or `DUPLICATE_MODEL`. */
  registerModel(name: string, model: ChatModel): () => void {
    if (typeof name !== 'string' || !MODEL_NAME.test(name)) {
      throw new AgentError('INVALID_MODEL', `Invalid model name ${JSON.stringify(name)}: use 1-64 of A-Z a-z 0-9 _ . - / (no colon).`)
    }
    if (!model || typeof model.generate !== 'function') {
      throw new AgentError('INVALID_MODEL', `Model "${name}" must have a generate() method.`)
    }
    return this.ctx.effect(() => {
      if (this.models.has(name)) {
        throw new AgentError('DUPLICATE_MODEL', `A model named "${name}" is already registered; give this one another name.`)
      }
      this.models.set(name, model)
      return () => {
        if (this.models.get(name) === model) this.models.delete(name)
      }
    })
  }

  modelNames(): string[] {
    return [...this.models.keys()]
  }

  /** Finds the model behind a ref. An unknown ref yields an error text naming the registered models. */
  resolveModel(ref: string | undefined): { model: ChatModel; modelId?: string } | { error: string } {
    ref ||= this.config.model
    const names = this.modelNames()
    if (!ref) {
      if (names.length === 1) return { model: this.models.get(names[0])! }
      return { error: `No model was named and no default is configured. Registered models: ${names.join(', ') || '(none)'}.` }
    }
    const colon = ref.indexOf(':')
    const name = colon < 0 ? ref : ref.slice(0, colon)
    const model = this.models.get(name)
    if (!model) return { error: `Unknown model "${ref}". Registered models: ${names.join(', ') || '(none)'}.` }
    return colon < 0 ? { model } : { model, modelId: ref.slice(colon + 1) }
  }

  create(options: CreateAgentOptions = {}): Agent {
    checkOptions(options)
    const { parent } = options
    if (parent !== undefined && !(parent instanceof Agent)) {
      throw new AgentError('INVALID_OPTIONS', 'options.parent must be an Agent created by ctx.agents.')
    }
    const maxSteps = options.maxSteps ?? this.config.maxSteps ?? 25
    if (!Number.isInteger(maxSteps) || maxSteps < 1) {
      throw new AgentError('INVALID_OPTIONS', `options.maxSteps must be a positive integer, got ${maxSteps}.`)
    }
    const id = `${options.label ?? 'agent'}-${++this.counter}`
    return new Agent(this.host, {
      id,
      parent,
      depth: parent ? parent.depth + 1 : this.rootDepth,
      cwd: resolve(options.cwd ?? parent?.cwd ?? this.config.cwd ?? process.cwd()),
      persona: options.persona ?? this.config.persona,
      model: options.model ?? parent?.model ?? this.config.model,
      tools: options.tools ?? parent?.tools ?? this.registry.view(),
      seed: options.seed,
      maxSteps,
      maxTokens: options.maxTokens ?? this.config.maxTokens,
      label: options.label,
    })
  }
}

const ROLES = new Set(['user', 'assistant', 'tool'])

/** Catches misuse at `create`, where it is easy to trace, rather than as an odd failure mid-run. */
function checkOptions(options: CreateAgentOptions): void {
  if (options === null || typeof options !== 'object') {
    throw new AgentError('INVALID_OPTIONS', 'create() takes an options object.')
  }
  for (const key of ['model', 'persona', 'cwd', 'label'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'string') {
      throw new AgentError('INVALID_OPTIONS', `options.${key} must be a string, got ${typeof options[key]}.`)
    }
  }
  const { maxTokens, tools, seed } = options
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens < 1)) {
    throw new AgentError('INVALID_OPTIONS', `options.maxTokens must be a positive integer, got ${maxTokens}.`)
  }
  if (tools !== undefined && !isToolView(tools)) {
    throw new AgentError('INVALID_OPTIONS', 'options.tools must be a ToolView (ctx.tools.view(), or a view\'s restrict()); pass a filter through restrict.')
  }
  if (seed !== undefined) {
    if (!Array.isArray(seed)) throw new AgentError('INVALID_OPTIONS', 'options.seed must be an array of transcript messages.')
    seed.forEach((message, i) => {
      if (!message || !ROLES.has(message.role) || typeof message.content !== 'string') {
        throw new AgentError('INVALID_OPTIONS', `options.seed[${i}] is not a transcript message ({ role: 'user' | 'assistant' | 'tool', content: string }).`)
      }
    })
  }
}

function isToolView(value: unknown): value is ToolView {
  const view = value as ToolView | null
  return !!view && typeof view === 'object' && typeof view.list === 'function'
    && typeof view.execute === 'function' && typeof view.restrict === 'function' && typeof view.has === 'function'
}

/** undefined when unset, null when set to something that is not a depth. */
function depthFromEnv(value: string | undefined): number | undefined | null {
  if (value === undefined || !value.trim()) return undefined
  // Decimal digits only: Number() would also accept ' ', '0x2' and '1e1'.
  if (!/^\d+$/.test(value.trim())) return null
  const depth = Number(value.trim())
  return Number.isSafeInteger(depth) ? depth : null
}

export namespace AgentRuntime {
  export interface Config {
    model?: string
    persona?: string
    maxSteps?: number
    maxTokens?: number
    cwd?: string
    depth?: number
  }
}

export default AgentRuntime
