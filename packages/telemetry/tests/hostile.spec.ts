/// <reference types="mocha" />
// Issue 26, item 10: spans carry no escape or bidi characters from names and ids, and with content
// capture off no tool or model text at all, errors included (only codes and classes).
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { GenerateRequest, ScriptedResponse } from '@cordis-subagents/agent'
import { lastUserText, startTracedHost, toolResults, type TracedHost } from '../../../test/support/traced-host.js'

const SECRET = 'hunter2-db-password'
/** Every character the spans must not carry in a name or id. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/
/** In a status message newline and tab are allowed (it is text); nothing else of the above. */
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/
const HOSTILE_TOOL = '\x1b[31mno_such_tool\u202e\x07'
const HOSTILE_ID = 'call-\x1b]0;pwned\x07\u202e\x9b2J'
const HOSTILE_LABEL = 'main\x1b[2J\u202e\x00'

/**
 * Root: one failing database tool call, one call of a tool that does not exist (hostile name and
 * id), one delegation whose child's model throws.
 */
function script(request: GenerateRequest): ScriptedResponse {
  const prompt = lastUserText(request)
  if (prompt === 'FAIL') {
    throw Object.assign(new Error(`upstream said: invalid login, password=${SECRET}`), { name: 'Upstream\x1b[2JError\u202e', code: 'MODEL_HTTP_401' })
  }
  if (toolResults(request).length) return { text: 'done' }
  return {
    toolCalls: [
      { id: 'call-db', name: 'db_query', input: { sql: 'select 1' } },
      { id: HOSTILE_ID, name: HOSTILE_TOOL, input: {} },
      { id: 'call-sub', name: 'subagent', input: { description: 'task \x1b[31mred\u202e', prompt: 'FAIL' } },
    ],
  }
}

function registerDbTool(ctx: Context) {
  ctx.plugin({
    name: 'db-tool',
    inject: ['tools'],
    apply(ctx: Context) {
      ctx.tools.register({
        name: 'db_query',
        description: 'Runs a query.',
        input: z.object({ sql: z.string() }),
        execute: () => ({ content: `connection to postgres://app:${SECRET}@db.internal/prod failed\nretry later`, isError: true }),
      })
    },
  })
}

async function traced(captureContent: boolean): Promise<{ host: TracedHost; spans: ReadableSpan[] }> {
  const host = await startTracedHost({ script, telemetry: { captureContent } })
  registerDbTool(host.ctx)
  await host.ctx.lifecycle.flush()
  const result = await host.ctx.agents.create({ label: HOSTILE_LABEL }).run('ROOT')
  expect(result.stopReason, result.diagnostic).to.equal('completed')
  return { host, spans: host.exporter.getFinishedSpans() as ReadableSpan[] }
}

function strings(span: ReadableSpan): string[] {
  const values = [span.name, ...Object.values(span.attributes).flat()]
  for (const event of span.events) values.push(event.name, ...Object.values(event.attributes ?? {}).flat())
  return values.filter((value): value is string => typeof value === 'string')
}

describe('@cordis-subagents/telemetry: hostile names and error text', function () {
  this.timeout(20_000)
  let host: TracedHost | undefined

  afterEach(async () => {
    await host?.stop()
    host = undefined
  })

  it('capture off: no tool or model text on any span, errors included; only codes and classes', async () => {
    const run = await traced(false)
    host = run.host
    const { spans } = run
    const byOp = (op: string) => spans.filter((span) => span.attributes['gen_ai.operation.name'] === op)
    expect(spans.length).to.be.at.least(7)
    for (const span of spans) {
      const everything = JSON.stringify({ strings: strings(span), status: span.status })
      expect(everything, span.name).to.not.include(SECRET)
      expect(everything, span.name).to.not.include('upstream said')
      expect(everything, span.name).to.not.include('retry later')
    }
    const db = byOp('execute_tool').find((span) => span.attributes['gen_ai.tool.name'] === 'db_query')!
    expect(db.attributes['error.type']).to.equal('tool_error')
    expect(db.status).to.deep.equal({ code: 2, message: 'The tool call returned an error.' })
    // The child's failed model call keeps its class and its stable code, not its message.
    const failedChat = byOp('chat').find((span) => span.status.code === 2)!
    expect(failedChat.attributes['error.type']).to.equal('UpstreamError')
    expect(failedChat.attributes['cordis_subagents.error.code']).to.equal('MODEL_HTTP_401')
    expect(failedChat.status.message).to.equal('The model call failed (UpstreamError, MODEL_HTTP_401).')
    expect(failedChat.events.map((event) => event.attributes)).to.deep.equal([{ 'exception.type': 'UpstreamError' }])
    const child = spans.find((span) => span.name === 'invoke_agent spawn')!
    expect(child.status).to.deep.equal({ code: 2, message: 'The run ended with error.' })
    const delegation = spans.find((span) => span.name === 'subagent spawn')!
    expect(delegation.status).to.deep.equal({ code: 2, message: 'The child ended with error.' })
  })

  it('names and ids from outside lose escape sequences whole, C0, C1, DEL and bidi controls (tool names, call ids, labels, error classes)', async () => {
    const run = await traced(false)
    host = run.host
    const { spans } = run
    for (const span of spans) {
      for (const value of strings(span)) expect(CONTROL.test(value), `${span.name}: ${JSON.stringify(value)}`).to.equal(false)
      expect(CONTROL_IN_TEXT.test(span.status.message ?? ''), span.name).to.equal(false)
    }
    const names = spans.map((span) => span.name)
    expect(names).to.include('execute_tool no_such_tool')
    expect(names).to.include('invoke_agent main')
    const unknown = spans.find((span) => span.attributes['gen_ai.tool.name'] === 'no_such_tool')!
    expect(unknown.attributes['gen_ai.tool.call.id']).to.equal('call-')
    const delegation = spans.find((span) => span.name === 'subagent spawn')!
    expect(delegation.attributes['cordis_subagents.subagent.label']).to.equal('task red')
  })

  it('capture on: the tool\'s first line and the model\'s error are recorded (content, on request), still without control characters', async () => {
    const run = await traced(true)
    host = run.host
    const { spans } = run
    const db = spans.find((span) => span.attributes['gen_ai.tool.name'] === 'db_query')!
    expect(db.status.message).to.equal(`connection to postgres://app:${SECRET}@db.internal/prod failed`)
    const failedChat = spans.find((span) => span.attributes['gen_ai.operation.name'] === 'chat' && span.status.code === 2)!
    expect(failedChat.status.message).to.include('upstream said')
    for (const span of spans) expect(CONTROL_IN_TEXT.test(span.status.message ?? ''), span.name).to.equal(false)
  })
})
