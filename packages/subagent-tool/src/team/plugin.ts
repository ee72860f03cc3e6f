// A delegation tool load that names an agent (`agent`): its tool's targets are that agent's team.
import type { Context } from 'cordis'
import type { AgentDefinitions } from '@cordis-subagents/definitions'
import type { DeadlineQueue } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolReservation, ToolResult } from '@cordis-subagents/tools'
import { runDelegation } from '../call.js'
import type { InFlight } from '../call-types.js'
import { continueParked } from '../continued.js'
import type { Config } from '../config.js'
import { teamInput, type TeamInput } from './input.js'
import { memberOptions, suspendedMember, withAgent } from './member.js'
import { describeTeam, outsideTeam } from './wording.js'
import { type TeamTalk, teamTalk } from './talk-load.js'
import { SubagentToolError } from '../errors.js'

export interface TeamParts {
  reservation: ToolReservation
  subagents: SubagentService
  inFlight: Set<InFlight>
  parked: Set<SubagentHandle>
  deadlines: DeadlineQueue | undefined
  onParked(run: SubagentHandle): void
}

/**
 * Mounts the team tool of `config.agent`: `{ agent, description, prompt }`, `agent` an enum of the
 * team's names (sorted), the description composed from their `does`. It follows the definitions:
 * re-derived when they change, absent while the agent is undefined or its team is empty, and while
 * `ctx.agentDefinitions` is not loaded (it follows that plugin in and out, in any load order). Each call
 * runs on the member's own provider, soul, uses, budget and model.
 */
export function applyTeam(ctx: Context, config: Config, parts: TeamParts): void {
  const conflicting = (['provider', 'persona', 'toolFilter'] as const).filter((key) => config[key] !== undefined)
  if (conflicting.length) {
    const keys = conflicting.map((key) => `config.${key}`).join(', ')
    throw new SubagentToolError('INVALID_CONFIG',
      `subagent-tool: a team tool (config.agent) takes ${conflicting.join(', ')} from each member's definition; remove ${keys}.`)
  }
  if (config.mode === 'background') {
    throw new SubagentToolError('INVALID_CONFIG',
      'subagent-tool: a team tool (config.agent) runs in mode sync only; remove config.mode: background.')
  }
  const state = { unloaded: false }
  // Claimed at load, like the team tool's own name: a taken name fails this load.
  const talk = config.talk ? teamTalk(ctx, config.toolName) : undefined
  // The definitions come and go with their plugin, in any load order: the tool is mounted while they are here.
  ctx.inject(['agentDefinitions'], (inner) => serveTeam(inner, config, parts, state, talk))
  ctx.on('dispose', () => {
    state.unloaded = true
    for (const run of [...parts.inFlight]) run.cancel('unload')
    for (const run of parts.parked) if (run.state !== 'ended') run.dispose().catch(() => {})
    parts.parked.clear()
  })
}

function serveTeam(ctx: Context, config: Config, parts: TeamParts, state: { unloaded: boolean }, talk: TeamTalk | undefined): void {
  const logger = ctx.logger('subagent-tool')
  const agent = config.agent!
  const definitions = ctx.get('agentDefinitions') as AgentDefinitions
  const { reservation, subagents, inFlight, deadlines, onParked } = parts
  let unmount: (() => void) | undefined
  let mounted = ''
  // A continued call (after its child's question): the member and provider its suspension kept.
  const continued = (state: unknown) => {
    const member = suspendedMember(state, agent)
    const { timeout, maxOutputBytes, questions } = config
    const options = { timeout, maxOutputBytes, questions, provider: member.provider }
    return { options, finish: (result: ToolResult) => withAgent(result, member.agent, member.provider) }
  }

  const mount = () => {
    const lead = definitions.get(agent)
    const team = lead ? definitions.team(agent) : []
    const description = describeTeam(team)
    // Remount only when what the model sees changed: another entry's reload leaves this tool alone.
    if (team.length && description === mounted) return
    unmount?.()
    unmount = undefined
    mounted = ''
    if (!lead) return void logger.info('tool "%s" waits for agent "%s" to be defined', config.toolName, agent)
    if (!team.length) return void logger.warn('tool "%s" not mounted: agent "%s" has no team (no member defined)', config.toolName, agent)
    const names = team.map((member) => member.name)
    mounted = description
    unmount = reservation.register({
      name: config.toolName,
      description,
      input: teamInput(names),
      ...config.nested ? {} : { maxCallerDepth: 0 },
      execute: (input: TeamInput, exec) => {
        if (state.unloaded) return { isError: true, content: 'Subagent not started: the subagent tool was unloaded.' }
        const member = definitions.get(input.agent)
        if (!member || !definitions.get(agent)?.team.includes(input.agent)) {
          return { isError: true, content: outsideTeam(input.agent, definitions.team(agent).map((known) => known.name)) }
        }
        const options = memberOptions(config, member, subagents, definitions, talk?.names)
        // A team that talks: the coordinator run's board learns the member's child as soon as it is handed over.
        const joining = talk?.member(exec.agent, member.name)
        const running = runDelegation(subagents, options, input, exec, inFlight, deadlines, { onParked, onStarted: joining?.onStarted })
        joining?.after(running)
        return running.then((result) => withAgent(result, member.name, member.provider))
      },
      resume: (answer, suspension, exec) => {
        if (state.unloaded) return { isError: true, content: 'The answer was not passed on: the subagent tool was unloaded.' }
        const runId = (suspension.state as { runId?: unknown } | undefined)?.runId
        const { options, finish } = continued(suspension.state)
        const questionId = suspension.question.id
        const continuing = continueParked(subagents, options, String(runId), answer, exec, inFlight, deadlines, true, onParked, questionId)
        return continuing.then(finish)
      },
      withdrawn: (suspension, exec) => {
        if (state.unloaded) return { isError: true, content: 'The subagent\'s outcome was not passed on: the subagent tool was unloaded.' }
        const runId = String((suspension.state as { runId?: unknown } | undefined)?.runId)
        const { options, finish } = continued(suspension.state)
        const questionId = suspension.question.id
        const continuing = continueParked(subagents, options, runId, undefined, exec, inFlight, deadlines, true, onParked, questionId)
        return continuing.then(finish)
      },
    })
    logger.debug('team tool "%s" mounted for agent "%s": %s', config.toolName, agent, names.join(', '))
  }

  ctx.effect(() => definitions.serveTeam(agent, config.toolName))
  if (talk) talk.serve(ctx, definitions, agent)
  ctx.on('agent-definitions/changed', mount)
  mount()
  ctx.on('dispose', () => {
    unmount?.()
    unmount = undefined
  })
}
