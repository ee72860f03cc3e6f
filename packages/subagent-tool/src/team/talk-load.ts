// A team tool load's talk: its two tools' names (claimed at load), a board per coordinator run, and the
// hooks that tell a board which child is which member. A run is one turn of the coordinator: the board is
// made at the turn's first team call and closed when the turn ends (a leg parked on a question is the same
// turn: it keeps its board through `resume`), so the next turn starts with an empty one.
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
  /** Before a member's delegation by `coordinator`: its run's board waits for the child; `onStarted` records it, `after` ends the wait. */
  member(coordinator: unknown, name: string): { onStarted(run: SubagentHandle): void; after(running: Promise<unknown>): void }
  /** Mounts the tools while the definitions are here; other team loads hide them from their members. */
  serve(ctx: Context, definitions: AgentDefinitions, agent: string): void
}

export function teamTalk(ctx: Context, toolName: string): TeamTalk {
  const names = talkNames(toolName)
  const reserved = [ctx.tools.reserve(names.tasks), ctx.tools.reserve(names.post)] as const
  // The board of the coordinator's run going on now (the agent whose call started the members), dropped when it ends.
  const boards = new KeptWith<TeamBoard>('team board')
  // The board each member joined: a member still at work after its run ended finds that one closed, never the next run's.
  const joined = new KeptWith<TeamBoard>('team board joined')
  const runBoard = (coordinator: Agent): TeamBoard => {
    const current = boards.get(coordinator)
    if (current && !current.closed) return current
    const board = boards.set(coordinator, new TeamBoard(coordinator))
    closeAtRunEnd(coordinator, board, () => {
      if (boards.get(coordinator) === board) boards.delete(coordinator)
    })
    return board
  }
  return {
    names: [names.tasks, names.post],
    member(caller, name) {
      const coordinator = caller as Agent
      // A caller that is no agent of ours (a plain `{ id, depth }` through ctx.tools) has no children and no runs: no board.
      if (!Array.isArray((coordinator as Partial<Agent>).children) || typeof coordinator.nextResult !== 'function') return NO_BOARD
      const board = runBoard(coordinator)
      let started!: () => void
      board.expect(new Promise<void>((resolve) => started = resolve))
      return {
        onStarted(run) {
          const childId = run.info.childId ?? run.childId
          const child = coordinator.children.find((agent) => agent.id === childId)
          // Handed over after the run ended (its turn was aborted meanwhile): the member finds its board closed.
          if (child) {
            joined.set(child, board)
            board.join(name, child)
          }
          started()
        },
        after(running) {
          running.then(started, started)
        },
      }
    },
    serve(inner, definitions, agent) {
      // A member's own board; else (its start not recorded yet) its coordinator's current one, which waits for it.
      const boardOf = (caller: Agent) => joined.get(caller) ?? (caller.parent ? boards.get(caller.parent) : undefined)
      const [tasks, post] = talkTools(toolName, boardOf)
      inner.effect(() => reserved[0].register(tasks))
      inner.effect(() => reserved[1].register(post))
      inner.effect(() => definitions.serveTeam(agent, names.tasks))
      inner.effect(() => definitions.serveTeam(agent, names.post))
    },
  }
}

const NO_BOARD = { onStarted() {}, after() {} }

/**
 * Calls `ended` and closes `board` once the coordinator's run ends: the end of the leg running now (else of its next
 * one) with any stop reason but `pending`, a failed leg, or the coordinator's dispose. A leg that parks on a question
 * is not the end: the turn goes on in its next leg (`resume`, `withdraw`), with the same board.
 */
function closeAtRunEnd(coordinator: Agent, board: TeamBoard, ended: () => void): void {
  const end = () => {
    board.close()
    ended()
  }
  coordinator.nextResult().then((result) => {
    if (result.stopReason === 'pending') closeAtRunEnd(coordinator, board, ended)
    else end()
  }, end)
}
