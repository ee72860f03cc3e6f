/// <reference types="mocha" />
// Task calls against a real stdio server (tests/fixtures/task-server.mjs, its one tool requires a task): 50 calls
// leave the SDK client's progress maps as they were (it kept one handler, holding the call's onProgress, and one
// taskId entry per call until the connection closed), and a server whose taskIds are over 256 characters fails
// the mounted tool's call with MCP_CALL_FAILED saying why, after sending it tasks/cancel. A task call that fails
// otherwise once its task was created (a poll answered with an error, a malformed poll answer), or whose load is
// disposed while it runs, sends the server exactly one tasks/cancel and still fails with its own error.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { Redactor } from '@cordis-subagents/shared'
import { Connection } from '../src/connection.js'
import { client, eventually, makeExec, readLog, setup, tempDir } from './helpers.js'

const TASK_SERVER = fileURLToPath(new URL('./fixtures/task-server.mjs', import.meta.url))

interface SdkBooks {
  _progressHandlers: Map<number, unknown>
  _taskProgressTokens: Map<string, number>
}

describe('@cordis-subagents/mcp: task calls over stdio keep nothing per call', function () {
  this.timeout(60_000)
  let connection: Connection | undefined
  let ctx: Context | undefined

  afterEach(async () => {
    await connection?.close()
    connection = undefined
    await ctx?.stop()
    ctx = undefined
  })

  it('50 task calls, each with an onProgress of its own, leave the SDK client\'s progress maps as they were', async () => {
    connection = await Connection.open({
      kind: 'stdio', command: process.execPath, args: [TASK_SERVER], cwd: tempDir('mcp-task-call-'),
      env: { PATH: process.env.PATH ?? '' }, killGrace: 500, maxMessageBytes: 1 << 20,
    }, { timeout: 10_000, redactor: new Redactor([]), clientName: 'spec' })
    const books = () => {
      const sdk = (connection as unknown as { client: SdkBooks }).client
      if (!(sdk._progressHandlers instanceof Map) || !(sdk._taskProgressTokens instanceof Map)) throw new Error('the SDK client\'s progress maps moved')
      return { handlers: sdk._progressHandlers.size, tokens: sdk._taskProgressTokens.size }
    }
    const start = books()
    let progressed = 0
    for (let i = 0; i < 50; i++) {
      const turn = { held: new Array(1_000).fill(i) }
      const result = await connection.call('job', {}, {
        signal: new AbortController().signal, timeout: 10_000, task: true,
        onProgress: () => { progressed += turn.held.length > 0 ? 1 : 0 },
      })
      expect(result).to.deep.include({ content: [{ type: 'text', text: 'done' }] })
    }
    expect(progressed, 'the server\'s progress notifications during the tasks').to.be.at.least(50)
    expect(books()).to.deep.equal(start)
  })

  it('a server whose taskIds are over 256 characters: the call fails MCP_CALL_FAILED saying why, and the task is cancelled', async () => {
    const dir = tempDir('mcp-task-call-')
    const log = join(dir, 'tasks.log')
    ;({ ctx } = await setup())
    ctx.plugin(client, { name: 'long', command: process.execPath, args: [TASK_SERVER, '10000'], env: { TASK_LOG: log } })
    await eventually('long__job mounted', () => ctx!.tools.has('long__job'), 30_000)
    const result = await ctx.tools.view().execute({ name: 'long__job', input: {} }, makeExec())
    expect(result.isError).to.equal(true)
    expect(result.content.slice(0, 300)).to.equal('MCP tool long/job failed: MCP_CALL_FAILED: the server named its task with an id of 10000 characters, over the 256 this client ' +
      'accepts, so the task was cancelled (tasks/cancel); ask the server\'s authors for shorter task ids')
    expect(readLog(log)).to.equal('cancel 10000\n')
  })

  const load = (dir: string, mode: string) => {
    const log = join(dir, 'tasks.log')
    const fork = ctx!.plugin(client, { name: 'srv', command: process.execPath, args: [TASK_SERVER, '36', mode], env: { TASK_LOG: log } })
    return { log, fork }
  }

  for (const [mode, said] of [['poll-error', 'too many requests'], ['poll-malformed', 'invalid_value']]) {
    it(`a task whose poll fails (${mode}): the call fails MCP_CALL_FAILED with that error, and the server gets one tasks/cancel`, async () => {
      ;({ ctx } = await setup())
      const { log } = load(tempDir('mcp-task-call-'), mode)
      await eventually('srv__job mounted', () => ctx!.tools.has('srv__job'), 30_000)
      const result = await ctx.tools.view().execute({ name: 'srv__job', input: {} }, makeExec())
      expect(result.isError).to.equal(true)
      expect(result.content, result.content).to.match(/^MCP tool srv\/job failed: MCP_CALL_FAILED: /)
      expect(result.content, result.content).to.include(said)
      expect(readLog(log)).to.equal('cancel 36\n')
      await ctx.stop()
      ctx = undefined
      expect(readLog(log), 'no second cancel at the close').to.equal('cancel 36\n')
    })
  }

  it('a load disposed while its task runs sends the server one tasks/cancel before closing; the call fails MCP_SERVER_CLOSED', async () => {
    ;({ ctx } = await setup())
    const { log, fork } = load(tempDir('mcp-task-call-'), 'working')
    await eventually('srv__job mounted', () => ctx!.tools.has('srv__job'), 30_000)
    const pending = ctx.tools.view().execute({ name: 'srv__job', input: {} }, makeExec())
    await new Promise((resolve) => setTimeout(resolve, 300))
    fork.dispose()
    await ctx.lifecycle.flush()
    const result = await pending
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/MCP_SERVER_CLOSED/)
    expect(readLog(log)).to.equal('cancel 36\n')
  })
})
