import { z } from 'zod'
import type { Context } from 'cordis'
import { BenchModel, calls, CHILD, host, lastMessage, text } from '../lib.js'

export interface IsolationRow { mode: string; reads: number; bytes: number; messages: number }

const FILE = 'x'.repeat(2048)

/** Parent transcript size after a task of N 2 KiB file reads, done inline vs delegated to `subagent`. */
export async function isolation(options: { inline: number; delegated: number[] }): Promise<IsolationRow[]> {
  const model = new BenchModel((request) => {
    const last = lastMessage(request)
    const first = request.messages[0].content
    if (last.role === 'tool') {
      return first.startsWith(CHILD) ? text(`Summary: read ${request.messages.length - 2} files; the answer is 42.`) : text('Final answer: 42.')
    }
    const [kind, count] = last.content.replace(CHILD, '').split(' ')
    const n = Number(count)
    if (kind === 'delegate') return calls([{ name: 'subagent', input: { description: 'read the files', prompt: `${CHILD}read ${n}` } }])
    return calls(Array.from({ length: n }, (_, i) => ({ name: 'read_file', input: { path: `src/file${i}.ts` } })))
  })
  const h = await host({ model })
  h.ctx.plugin((ctx: Context) => {
    ctx.tools.register({ name: 'read_file', description: 'Read a file.', input: z.object({ path: z.string() }), execute: () => ({ content: FILE }) })
  })
  await h.ctx.lifecycle.flush()
  const rows: IsolationRow[] = []
  const measure = async (mode: string, prompt: string, reads: number) => {
    const agent = h.ctx.agents.create({})
    const result = await agent.run(prompt)
    if (result.stopReason !== 'completed') throw new Error(`isolation: ${JSON.stringify(result)}`)
    const messages = agent.transcript.messages
    rows.push({ mode, reads, bytes: Buffer.byteLength(JSON.stringify(messages)), messages: messages.length })
    await agent.dispose()
  }
  try {
    await measure('inline', `read ${options.inline}`, options.inline)
    for (const n of options.delegated) await measure('delegated', `delegate ${n}`, n)
  } finally {
    await h.stop()
  }
  return rows
}
