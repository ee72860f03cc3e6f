/// <reference types="mocha" />
// What a span records is well-formed text: captured content, names and ids and status messages are cut with shared's
// `headChars` (never half a surrogate pair: a lone one makes the exported JSON one that PostgreSQL's jsonb or a Python
// backend refuses) and cleaned with shared's `peerLine` / `peerText`, not a filter of telemetry's own.
import { expect } from 'chai'
import type { Span, SpanStatus } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { GenerateRequest, ScriptedResponse } from '@cordis-subagents/agent'
import { peerLine } from '@cordis-subagents/shared'
import { z } from 'zod'
import { bounded, ContentPolicy } from '../src/content.js'
import { fail } from '../src/runs.js'
import { lastUserText, startTracedHost, toolResults, type TracedHost } from '../../../test/support/traced-host.js'

/** A lone surrogate anywhere in `text`. */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const wellFormed = (text: string) => !LONE.test(text)
const EMOJI = '\u{1F600}'
/** `n` ASCII characters, then an emoji whose high half is character n + 1. */
const emojiAt = (n: number, tail = ' tail') => 'a'.repeat(n) + EMOJI + tail

/** A span that only records what `fail` sets. */
function statusSpan(): { span: Span; status: () => SpanStatus | undefined; attributes: Record<string, unknown> } {
  let status: SpanStatus | undefined
  const attributes: Record<string, unknown> = {}
  const span = {
    setStatus(value: SpanStatus) { status = value; return span },
    setAttribute(key: string, value: unknown) { attributes[key] = value; return span },
  }
  return { span: span as unknown as Span, status: () => status, attributes }
}

describe('@cordis-subagents/telemetry: cuts and cleaning of recorded text', () => {
  it('ContentPolicy.cut never ends in half an emoji, and counts what it cut', () => {
    const policy = new ContentPolicy(true, 100)
    const text = emojiAt(99)
    const cut = policy.cut(text)
    expect(wellFormed(cut), JSON.stringify(cut.slice(95))).to.equal(true)
    const head = cut.slice(0, cut.indexOf('… ['))
    expect(head).to.equal('a'.repeat(99))
    expect(cut).to.equal(`${head}… [${text.length - head.length} more characters]`)
    expect(policy.cut('short')).to.equal('short')
    expect(policy.cut(emojiAt(98, ''))).to.equal(emojiAt(98, ''))
  })

  it('captured messages and JSON parse to well-formed text (what a strict backend stores)', () => {
    const policy = new ContentPolicy(true, 100)
    const messages = JSON.parse(policy.messages('user', emojiAt(99))) as { parts: { content: string }[] }[]
    expect(wellFormed(messages[0].parts[0].content)).to.equal(true)
    expect(wellFormed(policy.json({ text: emojiAt(90) }))).to.equal(true)
  })

  it('bounded() cuts names on a character boundary, the scanned head and the 256 alike', () => {
    const long = bounded('x'.repeat(255) + EMOJI.repeat(300))
    expect(wellFormed(long)).to.equal(true)
    expect(long).to.equal(`${'x'.repeat(255)}…`)
    // The emoji straddles the end of the scanned head (4 × 256 units): the head drops it whole.
    const straddling = bounded('\u200b'.repeat(1023) + EMOJI + 'tail')
    expect(wellFormed(straddling), JSON.stringify(straddling)).to.equal(true)
    expect(straddling).to.equal('…')
  })

  it('bounded() cleans as shared peerLine does: tag characters, line separators and escape sequences go', () => {
    const hidden = 'read_file\u{E0069}\u{E0067}\u{E006E}\u{E006F}\u{E0072}\u{E0065}\u2028x'
    expect(bounded(hidden)).to.equal(peerLine(hidden))
    expect(bounded(hidden)).to.equal('read_file x')
    expect(bounded('\x1b[31mno_such_tool\u202e\x07')).to.equal('no_such_tool')
    expect(bounded('a\tb\nc')).to.equal('a b c')
  })

  it('a status message is cut on a character boundary and cleaned as shared peerText does', () => {
    const { span, status } = statusSpan()
    fail(span, 'x', emojiAt(1023))
    expect(wellFormed(status()!.message!)).to.equal(true)
    expect(status()!.message).to.equal('a'.repeat(1023))
    fail(span, 'x', 'first\u{E0069}\u2028second\tthird\x1b]0;title\x07')
    expect(status()!.message).to.equal('first\nsecond\tthird')
  })

  describe('through a traced run (capture on)', function () {
    this.timeout(20_000)
    let host: TracedHost | undefined

    afterEach(async () => {
      await host?.stop()
      host = undefined
    })

    it('a tool\'s result and its error line, each with an emoji at the cut, are recorded well-formed', async () => {
      const script = (request: GenerateRequest): ScriptedResponse => {
        if (lastUserText(request) !== 'ROOT' || toolResults(request).length) return { text: 'done' }
        return { toolCalls: [{ id: 'call-1', name: 'emoji_tool', input: {} }] }
      }
      host = await startTracedHost({ script, telemetry: { captureContent: true, maxContentLength: 40 } })
      host.ctx.plugin({
        name: 'emoji-tool',
        inject: ['tools'],
        apply(ctx) {
          ctx.tools.register({
            name: 'emoji_tool', description: 'Fails with a long line.', input: z.object({}),
            execute: () => ({ content: `${emojiAt(39, '')}${'b'.repeat(982)}${EMOJI}\nsecond line`, isError: true }),
          })
        },
      })
      await host.ctx.lifecycle.flush()
      const result = await host.ctx.agents.create({ label: 'main' }).run('ROOT')
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      const spans = host.exporter.getFinishedSpans() as ReadableSpan[]
      const tool = spans.find((span) => span.attributes['gen_ai.tool.name'] === 'emoji_tool')!
      const recorded = String(tool.attributes['gen_ai.tool.call.result'])
      expect(wellFormed(recorded), recorded.slice(0, 45)).to.equal(true)
      expect(recorded).to.match(/^a{39}… \[\d+ more characters\]$/)
      // The first line is 39 + 2 + 982 + 2 units: the second emoji straddles the status message's cut at 1,024.
      const message = tool.status.message!
      expect(wellFormed(message), JSON.stringify(message.slice(-4))).to.equal(true)
      expect(message).to.equal(`${emojiAt(39, '')}${'b'.repeat(982)}`)
    })
  })
})
