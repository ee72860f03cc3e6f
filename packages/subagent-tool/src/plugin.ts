import type { Context } from 'cordis'
import { DeadlineQueue, missingCapability, withoutCallerTracing } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentProvider } from '@cordis-subagents/subagents-service'
import { outputContract } from '@cordis-subagents/agent'
import { delegateSync, inputSchema } from './call.js'
import type { InFlight, ToolLoad } from './call-types.js'
import { continueParked } from './continued.js'
import { delegateInBackground } from './background.js'
import { controlVerbs } from './verb-names.js'
import { checkToolFilter, type Config, NOTE_ROOM_BYTES } from './config.js'
import { describeTool } from './wording.js'
import { applyTeam } from './team/plugin.js'
import { SubagentToolError } from './errors.js'

export const name = 'subagent-tool'
export const reusable = true
export const inject = ['tools', 'subagents']

export function apply(ctx: Context, config: Config) {
  checkToolFilter(config.toolFilter)
  // A bad output schema fails the load (`INVALID_OUTPUT_SCHEMA`), not every call.
  if (config.output) outputContract(config.output, 'subagent-tool: config.output')
  const logger = ctx.logger(`subagent-tool`)
  // ctx.tools caps every tool result: keep the child's output (and our truncation note, headline
  // and diagnostic) under it, so the note that says what was cut is never cut itself.
  const registryCap = ctx.tools.maxResultBytes
  if (Number.isSafeInteger(registryCap) && config.maxOutputBytes > registryCap - NOTE_ROOM_BYTES) {
    const lowered = Math.max(1, registryCap - NOTE_ROOM_BYTES)
    logger.info('tool "%s": maxOutputBytes %d lowered to %d (ctx.tools caps a tool result at %d bytes)', config.toolName, config.maxOutputBytes, lowered, registryCap)
    config = { ...config, maxOutputBytes: lowered }
  }
  // Claim the name first: a duplicate fails this plugin at load, whether or not providers exist.
  const reservation = ctx.tools.reserve(config.toolName)
  const inFlight = new Set<InFlight>()
  // Children this load's calls left parked: still parked at the unload, they are ended (nobody could resume them here).
  const parked = new Set<SubagentHandle>()
  const onParked = (run: SubagentHandle) => {
    for (const held of parked) if (held.state === 'ended') parked.delete(held)
    parked.add(run)
  }
  // Every call of this load has the same timeout: one queue, one timer, whatever the fan-out.
  const deadlines = config.timeout > 0 ? new DeadlineQueue(config.timeout) : undefined
  // Its timer outlives its last entry (unref'd, so the next call need not make one): gone with the load.
  if (deadlines) ctx.on('dispose', () => deadlines.close())
  const subagents = withoutCallerTracing(ctx.subagents)
  // The control verbs a background start's reply names: the app's registry, looked up once per load.
  const verbs = controlVerbs(subagents)
  let unmount: (() => void) | undefined
  // The calls read it (`unloaded`) without a call back into this file.
  const load: ToolLoad = { subagents, inFlight, deadlines, onParked, unloaded: false }
  if (config.agent !== undefined) return applyTeam(ctx, config, { reservation, subagents, inFlight, parked, deadlines, onParked })
  if (config.talk) {
    throw new SubagentToolError('INVALID_CONFIG', 'subagent-tool: config.talk gives a team\'s members their talk tools; it needs '
      + 'config.agent (a team tool). Set config.agent or remove config.talk.')
  }
  if (!config.provider) {
    throw new SubagentToolError('INVALID_CONFIG', 'subagent-tool: config.provider is required (or config.agent, for a team tool).')
  }

  const mount = (provider: SubagentProvider) => {
    unmount?.()
    unmount = undefined
    const missing = missingOption(provider, config)
    if (missing) {
      logger.warn('tool "%s" not mounted: provider "%s" does not support %s', config.toolName, provider.name, missing)
      return
    }
    unmount = reservation.register({
      name: config.toolName,
      description: describeTool(provider, config.mode === 'background'),
      input: inputSchema(provider.inheritsParentContext),
      // Not nested: agents at depth >= 1 (children, and roots a parent elsewhere started) do not see it.
      ...config.nested ? {} : { maxCallerDepth: 0 },
      // Built in the file the call runs in (call.ts, background.ts): a call never comes back here.
      execute: config.mode === 'background' ? delegateInBackground(config, load, verbs) : delegateSync(config, load),
      // A call that suspended on its child's question (`questions: escalate`) goes on with the answer.
      resume: (answer, suspension, exec) => {
        const runId = (suspension.state as { runId?: unknown } | undefined)?.runId
        if (load.unloaded) return { isError: true, content: 'The answer was not passed on: the subagent tool was unloaded.' }
        // The question the call waits on: answered already (by run id, or for a reattached twin), the call joins that answer.
        return continueParked(subagents, config, String(runId), answer, exec, inFlight, deadlines, true, onParked, suspension.question.id)
      },
      // Its question was withdrawn (the child ended unanswered, or went on without an answer): the call gets the child's outcome.
      withdrawn: (suspension, exec) => {
        const runId = (suspension.state as { runId?: unknown } | undefined)?.runId
        if (load.unloaded) return { isError: true, content: 'The subagent\'s outcome was not passed on: the subagent tool was unloaded.' }
        const questionId = suspension.question.id
        return continueParked(subagents, config, String(runId), undefined, exec, inFlight, deadlines, true, onParked, questionId)
      },
    })
    logger.debug('tool "%s" mounted on provider "%s"', config.toolName, provider.name)
  }

  // Mounted while provider `config.provider` is registered (now, and each time it comes back); unmounted when it goes.
  // Through `ctx`, not the untraced `subagents`: the follow is bound to this load's scope and ends with it.
  ctx.subagents.follow(config.provider, {
    added: mount,
    removed: () => {
      if (!unmount) return
      unmount()
      unmount = undefined
      // Debug, like the mount line: a provider reload is routine, and an info line per reload cost a third of a remount.
      logger.debug('tool "%s" unregistered: provider "%s" was removed; it returns when the provider does', config.toolName, config.provider)
    },
  })
  if (!unmount && !subagents.get(config.provider)) {
    logger.info('tool "%s" waits for provider "%s" (registered: %s)', config.toolName, config.provider, subagents.list().map((p) => p.name).join(', ') || 'none')
  }

  ctx.on('dispose', () => {
    load.unloaded = true
    for (const run of [...inFlight]) run.cancel('unload')
    for (const run of parked) if (run.state !== 'ended') run.dispose().catch(() => {})
    parked.clear()
  })
}

function missingOption(provider: SubagentProvider, config: Config): string | undefined {
  const missing = missingCapability(provider.capabilities, config)
  return missing && `\`${missing.option}\``
}
