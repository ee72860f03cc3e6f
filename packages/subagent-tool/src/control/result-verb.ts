import type { Agent } from '@cordis-subagents/agent'
import type { KeptResult, SubagentService } from '@cordis-subagents/subagents-service'
import type { Tool, ToolResult } from '@cordis-subagents/tools'
import { z } from 'zod'
import { BACKGROUND_HANDLE, failed } from './format.js'
import type { VerbOptions } from './options.js'

/** Bytes of a page's result kept for its header and footer, under the caller's result cap. */
const FRAME_BYTES = 1024

/**
 * `<prefix>_result`: reads the output of one of the caller's ended children again, a page at a
 * time (byte offsets, never inside a character), from the service's kept results
 * (`ctx.subagents.result`). Nothing is re-run. Only runs the calling agent started.
 */
export function buildResult(subagents: SubagentService, options: VerbOptions): Tool<any> {
  const { pageBytes } = options
  return {
    name: options.names.result,
    description: [
      'Read the output of a subagent you delegated to, again, after it ended (it is not run again).',
      'Use it when a subagent\'s result was truncated: the result names this tool, the run id and the offset to read on from.',
      `Returns at most ${pageBytes} bytes per call, starting at offset (bytes, default 0), and says where the next page starts.`,
    ].join(' '),
    input: z.strictObject({
      handle: z.string().min(1).max(256).describe('The run id (as the truncated result or metadata.runId named it, e.g. "run-…"), or a background handle ("bg-1").'),
      offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('Byte offset in the output to start at (default 0).'),
      length: z.number().int().min(1).max(pageBytes).optional().describe(`Most bytes to return (default and maximum ${pageBytes}).`),
    }),
    execute: async (input, exec) => {
      const agent = exec.agent as Agent
      const runId = runIdOf(subagents, agent, input.handle)
      if (typeof runId !== 'string') return runId
      let kept: KeptResult
      try {
        kept = await subagents.result(runId)
      } catch (error) {
        return refusal(subagents, agent, input.handle, runId, error)
      }
      if (kept.parentId !== agent.id) return notYours(input.handle)
      const cap = (agent.tools as Agent['tools'] | undefined)?.resultCap ?? Infinity
      const length = Math.max(1, Math.min(input.length ?? pageBytes, pageBytes, cap - FRAME_BYTES))
      return pageResult(kept, input.handle, input.offset ?? 0, length, options.names.result)
    },
  }
}

/** The run id `handle` names for `agent`: itself, or the run of one of its background handles; else the tool result that says why not. */
function runIdOf(subagents: SubagentService, agent: Agent, handle: string): string | ToolResult {
  if (!BACKGROUND_HANDLE.test(handle)) return handle
  try {
    const task = subagents.background.peek(agent)?.get(handle)
    if (!task) return notYours(handle)
    if (task.live) return { isError: true, content: `${handle} has not ended yet; wait for its result first (it is not re-run either way).` }
    if (!task.run) return { isError: true, content: `${handle} never started a subagent, so it has no output to read.` }
    return task.run.id
  } catch (error) {
    return failed(error)
  }
}

function refusal(subagents: SubagentService, agent: Agent, handle: string, runId: string, error: unknown): ToolResult {
  const code = (error as { code?: string })?.code
  if (code === 'NOT_FOUND' || code === 'INVALID_REQUEST') return notYours(handle)
  // A live run of another agent is reported like an unknown one: its state is none of the caller's business.
  const live = subagents.run(runId)
  if (code === 'NOT_ENDED' && live && live.info.parentId !== agent.id) return notYours(handle)
  return failed(error)
}

function notYours(handle: string): ToolResult {
  return {
    isError: true,
    content: `You have no ended subagent ${JSON.stringify(handle)} whose result is kept: check the run id (a truncated result names it), or it is not yours.`,
  }
}


/** One page of `kept.output`: bytes [offset, offset + length), moved to character boundaries, framed with where it is. */
function pageResult(kept: KeptResult, handle: string, offset: number, length: number, verb: string): ToolResult {
  const bytes = Buffer.from(kept.output, 'utf8')
  const total = bytes.length
  const metadata = { runId: kept.runId, stopReason: kept.stopReason, total, source: kept.source, truncated: kept.truncated }
  const about = `Subagent ${kept.runId}${kept.label ? ` (${JSON.stringify(kept.label)})` : ''} ended ${kept.stopReason}`
  if (offset > total || (offset === total && total > 0)) {
    return { isError: true, metadata, content: `${about}. Offset ${offset} is past the end of its output (${total} bytes); read from an offset below ${total}.` }
  }
  let start = offset
  while (start < total && isContinuation(bytes[start])) start++
  let end = Math.min(start + length, total)
  while (end < total && end > start && isContinuation(bytes[end])) end--
  // A character longer than the page is shown whole: a page always moves the offset on.
  if (end === start && start < total) while (++end < total && isContinuation(bytes[end]));
  const lines = [`${about}. Its output is ${total} bytes; this is bytes ${start} to ${end}.`]
  if (kept.diagnostic && start === 0) lines.push(`Diagnostic: ${kept.diagnostic}`)
  lines.push('', bytes.subarray(start, end).toString('utf8'), '')
  if (end < total) {
    lines.push(`[${total - end} more bytes: read on with ${verb} { "handle": "${handle}", "offset": ${end} }.]`)
  } else {
    lines.push(kept.truncated
      ? '[End of what is kept: the output was cut where it was stored (the store keeps a bounded text); the rest is gone.]'
      : '[End of the output.]')
  }
  const page: ToolResult = { content: lines.join('\n'), metadata: { ...metadata, offset: start, end } }
  // A typed run's value, read again whole: as its first result carried it.
  if (kept.value !== undefined && start === 0 && end === total) page.structured = kept.value
  return page
}

function isContinuation(byte: number): boolean {
  return (byte & 0xC0) === 0x80
}
