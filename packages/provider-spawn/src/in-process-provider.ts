import type { Context } from 'cordis'
import { addWork, describeError } from '@cordis-subagents/shared'
import { type AgentEvent, type AgentRuntime, type RunResult, withoutCallerTracing } from '@cordis-subagents/agent'
import {
  type ProviderStartRequest, startProviderRun, type SubagentProvider, type SubagentResult, type SubagentRun,
  type SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import { Steering } from './steering.js'

export const SUBAGENT_NOTE = [
  'You are a subagent: another agent delegated this task to you.',
  'Work on it on your own with the tools you have.',
  'Your final message is returned to the delegating agent as your whole answer, so make it complete and self-contained.',
].join(' ')

export interface InProcessProviderOptions {
  name: string
  description?: string
  /** true: the child starts with the parent's completed turns (fork); false: a fresh child (spawn). */
  inheritsParentContext: boolean
  /** Step limit of each child; default: the agent runtime's. */
  maxSteps?: number
}

/**
 * The provider behind both `spawn` and `fork`: a child agent in this process, created through
 * `ctx.agents` below its parent, with the parent's tools as its ceiling.
 */
export function createInProcessProvider(ctx: Context, options: InProcessProviderOptions): SubagentProvider {
  // Resolved at the first start, not at apply: a provider reloaded often never pays for it.
  let agents: AgentRuntime | undefined
  return {
    name: options.name,
    description: options.description,
    capabilities: { persona: true, toolFilter: true, depthLimit: true },
    inheritsParentContext: options.inheritsParentContext,
    start: (request) => startChild(agents ??= withoutCallerTracing(ctx.agents), options, request),
  }
}

async function startChild(agents: AgentRuntime, options: InProcessProviderOptions, request: ProviderStartRequest): Promise<SubagentRun> {
  let steering!: Steering
  // The run helper rejects an aborted request before the child exists, and disposes a child whose
  // start was aborted while it was being created: nothing is left running either way.
  const run = await startProviderRun(request, ({ update }) => {
    const { parent } = request
    const persona = request.persona ?? agents.config.persona
    const child = agents.create({
      parent,
      label: options.name,
      model: request.agentOptions?.model ?? parent.model,
      persona: persona ? `${persona}\n\n${SUBAGENT_NOTE}` : SUBAGENT_NOTE,
      tools: request.toolFilter ? parent.tools.restrict(request.toolFilter) : parent.tools,
      // Shared, not copied: the parent's completed turns are immutable (never its turn in flight).
      seed: options.inheritsParentContext ? parent.transcript.completed() : undefined,
      maxSteps: options.maxSteps,
      // The budget the service carved for this child: the child's spend is charged up the tree as it happens.
      ...request.budget ? { budget: request.budget } : {},
    })
    steering = new Steering(child)
    // Progress is built only while someone takes it (the caller's onUpdate or a subagent/update listener).
    const wanted = request.wantsUpdates ?? always
    const onEvent = (event: AgentEvent) => { if (wanted()) forward(event, update) }
    let working: Promise<SubagentResult> | undefined
    return {
      childId: child.id,
      begin: () => working = steering
        .run(request.prompt, (prompt) => child.run(prompt, { signal: request.signal, onEvent }))
        .then((run) => toSubagentResult(run, options.name), (error): SubagentResult => ({
          stopReason: 'error',
          output: '',
          diagnostic: `The child agent could not run: ${describeError(error)}`,
        })),
      // A limit that aborted the request (a timeout, a budget) stays the child's abort reason, so
      // the child and its own delegations end `timeout` / `budget` too, not `aborted`.
      cancel: (reason) => {
        steering.close()
        child.abort(request.signal.aborted ? request.signal.reason : new Error(reason ?? 'cancelled'))
      },
      // Idempotent: aborts a turn still running and waits until it and its tools are idle, then
      // for the result (the turn's end settles it a few ticks later; no follow-up turn starts
      // once the child is disposed), so the run helper never has to settle it for us.
      dispose: async () => {
        await child.dispose()
        await working
      },
    }
  })
  return { ...run, send: (message: string) => steering.send(message) }
}

function toSubagentResult(run: RunResult, provider: string): SubagentResult {
  const work = addWork(run.work.own, run.work.delegated)
  // Built by assignment: V8 runs `{ ...base, stopReason }` on a slow path (≈ 0.7 µs per child).
  const result: SubagentResult = { stopReason: run.stopReason, output: run.text, usage: run.usage, work }
  if (run.stopReason === 'max-steps') {
    // The turn ends at its limit, so its own model calls are the limit.
    result.stepLimit = run.steps
    result.diagnostic = `The child hit its step limit (${run.steps} steps) without a final answer. `
      + `Give it a narrower task, or raise \`maxSteps\` of the "${provider}" provider.`
    return result
  }
  if (run.diagnostic) result.diagnostic = run.diagnostic
  if (run.budget) result.budget = run.budget
  return result
}

const always = () => true

function forward(event: AgentEvent, send: (update: SubagentUpdate) => void) {
  let update: SubagentUpdate | undefined
  switch (event.type) {
    case 'step-start': update = { kind: 'step', step: event.step }; break
    case 'text': update = { kind: 'text', text: event.text, step: event.step }; break
    case 'tool-call': update = { kind: 'tool-call', tool: event.call.name, step: event.step }; break
    case 'tool-result': update = { kind: 'tool-result', tool: event.name, isError: !!event.result.isError, step: event.step }; break
  }
  if (update) send(update)
}
