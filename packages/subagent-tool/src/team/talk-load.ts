// A team tool load's talk: its two tools' names (claimed at load), a board per coordinator run, and the
// hooks that tell a board which child is which member.
import type { Context } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import type { AgentDefinitions } from '@cordis-subagents/definitions'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { KeptWith } from '@cordis-subagents/shared'
import { TeamBoard } from './board.js'
import { talkNames, talkTools } from './talk.js'

export interface TeamTalk {
  /** The talk tools' names: a member's child view is given them (see `memberOptions`). */
  readonly names: readonly string[]
  /** Before a member's delegation by `coordinator`: its board waits for the child; `onStarted` records it, `after` ends the wait. */
  member(coordinator: unknown, name: string): { onStarted(run: SubagentHandle): void; after(running: Promise<unknown>): void }
  /** Mounts the tools while the definitions are here; other team loads hide them from their members. */
  serve(ctx: Context, definitions: AgentDefinitions, agent: string): void
}

export function teamTalk(ctx: Context, toolName: string): TeamTalk {
  const names = talkNames(toolName)
  const reserved = [ctx.tools.reserve(names.tasks), ctx.tools.reserve(names.post)] as const
  // One board per coordinator run (the agent whose call started the members), gone with that agent.
  const boards = new KeptWith<TeamBoard>('team board')
  return {
    names: [names.tasks, names.post],
    member(caller, name) {
      const coordinator = caller as Agent
      let board = boards.get(coordinator)
      if (!board) boards.set(coordinator, board = new TeamBoard(coordinator))
      let started!: () => void
      board.expect(new Promise<void>((resolve) => started = resolve))
      return {
        onStarted(run) {
          const childId = run.info.childId ?? run.childId
          // A caller that is no agent of ours (a plain `{ id, depth }` through ctx.tools) has no children: no member joins.
          const { children } = coordinator as Partial<Agent>
          const child = Array.isArray(children) ? children.find((agent) => agent.id === childId) : undefined
          if (child) board.join(name, child)
          started()
        },
        after(running) {
          running.then(started, started)
        },
      }
    },
    serve(inner, definitions, agent) {
      const [tasks, post] = talkTools(toolName, (coordinator) => boards.get(coordinator))
      inner.effect(() => reserved[0].register(tasks))
      inner.effect(() => reserved[1].register(post))
      inner.effect(() => definitions.serveTeam(agent, names.tasks))
      inner.effect(() => definitions.serveTeam(agent, names.post))
    },
  }
}
