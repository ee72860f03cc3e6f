// A team that talks: the tools a team tool load (`talk: true`) gives the members it starts, over the
// board of their coordinator's run: the shared task list and a post to a sibling's inbox.
import { z } from 'zod'
import type { Agent } from '@cordis-subagents/agent'
import { MAX_INBOX_MESSAGE_LENGTH } from '@cordis-subagents/agent'
import { CodedError, describeError } from '@cordis-subagents/shared'
import type { Tool, ToolExecContext, ToolResult } from '@cordis-subagents/tools'
import { MAX_TASK_TEXT, type TeamBoard, type TeamTask } from './board.js'

/** The talk tools' names for a team tool named `toolName`. */
export function talkNames(toolName: string): { tasks: string; post: string } {
  return { tasks: `${toolName}_tasks`, post: `${toolName}_post` }
}

const tasksInput = z.strictObject({
  action: z.enum(['add', 'claim', 'complete', 'list']).describe('add: a new open task (title); claim: take task id (or the oldest open one) for yourself, exactly once; complete: finish a task you claimed (id, note); list: every task.'),
  title: z.string().max(MAX_TASK_TEXT).optional().describe('The task, for add: standalone, so any teammate can do it.'),
  id: z.number().int().min(1).optional().describe('The task number, for claim (optional) and complete.'),
  note: z.string().max(MAX_TASK_TEXT).optional().describe('What came of it, for complete (teammates read it in list).'),
})

const postInput = z.strictObject({
  to: z.string().min(1).max(200).describe('The teammate: its agent name (when one teammate has it) or its handle id, as the task list shows it.'),
  message: z.string().min(1).max(MAX_INBOX_MESSAGE_LENGTH).describe('What to tell it. It reads it before its next model call, labelled with your handle id.'),
})

const line = (task: TeamTask) => `#${task.id} [${task.state}${task.claimedBy ? ` by ${task.claimedBy}` : ''}] ${task.title}${task.note ? ` — ${task.note}` : ''}`

function failure(error: unknown): ToolResult {
  const code = error instanceof CodedError ? `${error.code}: ` : ''
  return { isError: true, content: `${code}${describeError(error)}` }
}

/**
 * The two talk tools of a team tool load: `<toolName>_tasks` and `<toolName>_post`. `boardOf(caller)` is the
 * board of the coordinator run that started the calling member (closed once that run ended), if any.
 */
export function talkTools(
  toolName: string, boardOf: (caller: Agent) => TeamBoard | undefined,
): [Tool<typeof tasksInput>, Tool<typeof postInput>] {
  const names = talkNames(toolName)
  const memberOf = async (exec: ToolExecContext) => {
    const caller = exec.agent as Agent
    const board = boardOf(caller)
    if (!board) return { board: undefined, member: undefined }
    return { board, member: await board.member(caller) }
  }
  const notMember = { isError: true, content: 'NOT_A_MEMBER: only a member of a running team (an agent its team tool started) can use this tool.' }

  const tasks: Tool<typeof tasksInput> = {
    name: names.tasks,
    description: 'Your team\'s shared task list (every teammate started by the same coordinator run sees it; it ends with that run): add a task, claim one (each task is claimed by exactly one teammate), complete the one you claimed, list them all.',
    input: tasksInput,
    async execute(input, exec) {
      try {
        const { board, member } = await memberOf(exec)
        if (!board) return notMember
        switch (input.action) {
          case 'add': return { content: `Added ${line(board.add(member, input.title ?? ''))}` }
          case 'claim': return { content: `Claimed ${line(board.claim(member, input.id))}` }
          case 'complete': {
            if (input.id === undefined) return { isError: true, content: 'INVALID_TASK: complete needs the id of the task you claimed.' }
            return { content: `Completed ${line(board.complete(member, input.id, input.note))}` }
          }
          default: {
            const all = board.list()
            return { content: all.length ? all.map(line).join('\n') : 'The task list is empty.' }
          }
        }
      } catch (error) {
        return failure(error)
      }
    },
  }

  const post: Tool<typeof postInput> = {
    name: names.post,
    description: 'Sends a message to a teammate\'s inbox (a sibling started by the same coordinator run); it reads it before its next model call. A teammate that ended, or a full inbox, is an error: the message was not delivered.',
    input: postInput,
    async execute(input, exec) {
      try {
        const { board, member } = await memberOf(exec)
        if (!board) return notMember
        const target = await board.post(member, input.to, input.message)
        return { content: `Delivered to ${target.handle.id} (${target.name}).` }
      } catch (error) {
        return failure(error)
      }
    },
  }
  return [tasks, post]
}
