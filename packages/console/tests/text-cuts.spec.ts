/// <reference types="mocha" />
// What the live view cuts (transcript entries, outputs, questions, progress lines, the API's error messages) is cut on
// a character boundary: a cut by UTF-16 index that fell inside a surrogate pair left half an emoji, which the page
// showed as U+FFFD and JSON carries as a `\ud83d` escape that strict readers refuse. The "[N more characters]" note
// counts the UTF-16 code units actually cut (the unit of `maxEntryChars`). In-process: the handler gets a fake request.
import { expect } from 'chai'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Message } from '@cordis-subagents/agent'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { agentTranscriptPage, cut, TranscriptRing } from '../src/transcript.js'
import { createHandler } from '../src/http.js'

const EMOJI = '\u{1F600}'
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function expectWellFormed(text: string | undefined) {
  expect(text).to.be.a('string')
  expect(LONE.test(text!), `lone surrogate in ${JSON.stringify(text!.slice(-40))}`).to.equal(false)
}

describe('console: cuts of text on the live view', () => {
  it('cut() keeps no half emoji and counts what it cut', () => {
    const text = 'a'.repeat(99) + EMOJI + ' tail' // 99 + 2 + 5 = 106 units
    const kept = cut(text, 100)
    expectWellFormed(kept)
    expect(kept).to.equal(`${'a'.repeat(99)} …[7 more characters]`)
    expect(cut('a'.repeat(98) + EMOJI + ' tail', 100)).to.equal(`${'a'.repeat(98)}${EMOJI} …[5 more characters]`)
    expect(cut('a'.repeat(98) + EMOJI, 100)).to.equal('a'.repeat(98) + EMOJI)
  })

  it('a recorded transcript entry and its tool name are cut on a character boundary', () => {
    const ring = new TranscriptRing(10, 100)
    ring.record({ kind: 'tool-call', text: 'a'.repeat(99) + EMOJI, tool: 't'.repeat(199) + EMOJI } as SubagentUpdate)
    const [entry] = ring.page(0, 10).entries
    expectWellFormed(entry.text)
    expectWellFormed(entry.tool)
  })

  it('an in-process agent\'s transcript is cut on a character boundary', () => {
    const messages = [
      { role: 'user', content: 'u'.repeat(49) + EMOJI },
      { role: 'assistant', content: 'a'.repeat(49) + EMOJI, toolCalls: [{ id: 'c1', name: 'write', input: { t: 'x'.repeat(42) + EMOJI } }] },
      { role: 'tool', name: 'write', callId: 'c1', content: 'r'.repeat(49) + EMOJI },
    ] as unknown as Message[]
    const page = agentTranscriptPage(messages, 0, 10, 50)
    expect(page.entries).to.have.length(4)
    for (const entry of page.entries) {
      expectWellFormed(entry.text)
      expect(entry.text).to.match(/ …\[\d+ more characters\]$/)
    }
  })

  it('a refused query parameter is quoted in the error without half an emoji', async () => {
    const token = 'console-text-cuts-token-0123456789'
    const guards = { hosts: new Set(['console.test']), origins: new Set<string>(), token, refused: new Map<string, number>() }
    const handler = createHandler({} as never, {} as never, guards, () => {})
    const offset = encodeURIComponent('9'.repeat(19) + EMOJI + 'x')
    const req = {
      method: 'GET', url: `/api/runs/r1/transcript?offset=${offset}`,
      headers: { host: 'console.test', authorization: `Bearer ${token}` },
    } as unknown as IncomingMessage
    const body = await new Promise<string>((resolve) => {
      const res = { headersSent: false, setHeader() {}, writeHead() {}, end: (text: string) => resolve(text) } as unknown as ServerResponse
      handler(req, res)
    })
    const { error } = JSON.parse(body) as { error: { code: string; message: string } }
    expect(error.code).to.equal('INVALID_REQUEST')
    expectWellFormed(error.message)
    expect(error.message).to.include(`got ${'9'.repeat(19)}.`)
  })
})
