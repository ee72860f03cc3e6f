/// <reference types="mocha" />
// Every place this client cuts a peer's text (an MCP server's description, result parts, progress messages, tool
// names, schema patterns and the errors they raise; an ACP client's server entries) cuts on a character boundary:
// a cut that fell inside a surrogate pair left half an emoji, which JSON carries as a `\ud83d` escape that strict
// peers refuse (PostgreSQL jsonb, Python's UTF-8 encoder). A "[cut: N more characters]" note counts the UTF-16 code
// units actually cut, the unit of `maxPartChars`. Where the cut's offset in the text is not fixed, both parities are tried.
import { expect } from 'chai'
import type { Context, Logger } from 'cordis'
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import type { ToolUpdate } from '@cordis-subagents/tools'
import type { Connection } from '../src/connection.js'
import { toToolResult } from '../src/convert.js'
import { mcpTool, ToolMount } from '../src/mount.js'
import { schemaCheck } from '../src/validation.js'
import { DEFAULT_SENT_SERVER_POLICY, sentServersRefusal } from '../src/client-servers.js'
import { makeExec } from './helpers.js'

const EMOJI = '\u{1F600}'
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
/** Well-formed UTF-16, and no lone surrogate written as a JSON escape either. */
function expectClean(text: string | undefined) {
  expect(text).to.be.a('string')
  expect(LONE.test(text!), `lone surrogate in ${JSON.stringify(text!.slice(-40))}`).to.equal(false)
  expect(/\\ud[89a-f][0-9a-f]{2}/i.test(text!), `escaped surrogate in ${text!.slice(-40)}`).to.equal(false)
}

const BOUNDS = { maxParts: 16, maxPartChars: 16 * 1024, maxImages: 0, maxImageBytes: 0 }
const textResult = (text: string) => toToolResult({ content: [{ type: 'text', text }] }, BOUNDS).content

type Progress = { progress: number; total?: number; message?: string }

function fakeConnection(result: unknown, progressMessage?: string): Connection {
  return {
    schemaCheck: () => () => [],
    call: async (_name: string, _args: Record<string, unknown>, options: { onProgress?: (p: Progress) => void }) => {
      if (progressMessage !== undefined) options.onProgress?.({ progress: 1, total: 2, message: progressMessage })
      return result
    },
  } as unknown as Connection
}

function recordingLog(warnings: unknown[][]): Logger {
  return { warn: (...args: unknown[]) => void warnings.push(args) } as unknown as Logger
}

const tool = (fields: Partial<McpTool>): McpTool => ({ name: 'echo', inputSchema: { type: 'object' }, ...fields }) as McpTool
const toolOptions = { server: 'fx', callTimeout: 1000, bounds: BOUNDS }

describe('@cordis-subagents/mcp: peer text is cut on a character boundary', () => {
  it('a text part cut where an emoji starts keeps the part before it, and the note counts the code units cut', () => {
    const text = 'x'.repeat(16 * 1024 - 1) + EMOJI + 'y'.repeat(10)
    const content = textResult(text)
    expectClean(content)
    expect(content).to.equal(`${'x'.repeat(16 * 1024 - 1)}\n[cut: 12 more characters]`)
  })

  it('the note of a long run of emoji counts what was cut, in the unit of maxPartChars, at either alignment', () => {
    for (const lead of ['', 'a']) {
      const text = lead + EMOJI.repeat(20_000)
      const content = textResult(text)
      expectClean(content)
      const [kept, note] = content.split('\n[cut: ')
      expect(kept.length).to.be.at.most(BOUNDS.maxPartChars).and.at.least(BOUNDS.maxPartChars - 1)
      expect(text.startsWith(kept)).to.equal(true)
      expect(note).to.equal(`${text.length - kept.length} more characters]`)
    }
  })

  it('structured content, resource text, resource links and an unknown part type are cut cleanly', () => {
    const structured = toToolResult({ content: [], structuredContent: { k: 'z'.repeat(16 * 1024 - 7) + EMOJI } }, BOUNDS).content
    expectClean(structured)
    expect(structured).to.match(/\n\[cut: 4 more characters\]$/)
    const parts = [
      { type: 'resource', resource: { uri: 'file:///r', text: 'r'.repeat(16 * 1024 - 13) + EMOJI } },
      { type: 'resource_link', uri: 'u'.repeat(2047) + EMOJI, name: 'n'.repeat(2047) + EMOJI },
      { type: 'a'.repeat(63) + EMOJI },
    ]
    const lines = toToolResult({ content: parts }, BOUNDS).content
    expectClean(lines)
    expect(lines).to.include(`[resource link ${'u'.repeat(2047)} (${'n'.repeat(2047)})]`)
    expect(lines).to.include(`[content of type ${'a'.repeat(63)}\n[cut: 2 more characters] not shown]`)
  })

  it('a tool description over 4 096 characters and a progress message over 1 024 are cut cleanly', async () => {
    const described = mcpTool('fx__described', tool({ description: 'd'.repeat(4095) + EMOJI }), fakeConnection({}), toolOptions, recordingLog([]))
    expectClean(described.description)
    expect(described.description).to.equal('d'.repeat(4095))
    const titled = mcpTool('fx__titled', tool({ title: 't'.repeat(4095) + EMOJI }), fakeConnection({}), toolOptions, recordingLog([]))
    expect(titled.description).to.equal('t'.repeat(4095))

    const updates: ToolUpdate[] = []
    const progressing = mcpTool('fx__echo', tool({}), fakeConnection({ content: [{ type: 'text', text: 'ok' }] }, 'm'.repeat(1023) + EMOJI), toolOptions, recordingLog([]))
    const result = await progressing.execute({}, makeExec({ onUpdate: (update) => void updates.push(update) }))
    expect(result.content).to.equal('ok')
    expect(updates).to.have.length(1)
    expectClean(updates[0].text)
    expect(updates[0].text).to.equal('m'.repeat(1023))
  })

  it('a skipped tool\'s name is quoted in the log without half an emoji', () => {
    const warnings: unknown[][] = []
    const mount = new ToolMount({} as Context, fakeConnection({}), { server: 'fx', deny: [], maxTools: 8, callTimeout: 1000, bounds: BOUNDS }, recordingLog(warnings))
    mount.sync([tool({ name: 'n'.repeat(99) + EMOJI })])
    expect(mount.names()).to.deep.equal([])
    expect(warnings).to.have.length(1)
    // One line for the listing, quoting the first skipped name (as JSON) after "first ".
    const quoted = /\(first ("(?:[^"\\]|\\.)*")/.exec(String(warnings[0][1]))?.[1] ?? ''
    expectClean(String(warnings[0][1]))
    expect(JSON.parse(quoted)).to.equal('n'.repeat(99))
  })

  it('a schema pattern quoted in a validation message or a warning, and the errors it raises, are cut cleanly', () => {
    const message = schemaCheck({ type: 'string', pattern: 'p'.repeat(199) + EMOJI }, () => {})('q')
    expect(message).to.have.length(1)
    expectClean(message[0].message)
    expect(message[0].message).to.equal(`must match pattern "${'p'.repeat(199)}"`)

    for (const lead of ['', 'a']) {
      const warnings: string[] = []
      // A lookahead RE2 cannot run: the warning quotes the pattern's head (100) and RE2's error, which quotes it too (200).
      schemaCheck({ type: 'string', pattern: `(${lead}${EMOJI.repeat(200)}` }, (reason) => void warnings.push(reason))('q')
      schemaCheck({ type: 'string', pattern: `${lead}${'q'.repeat(98)}${EMOJI}(?=x)` }, (reason) => void warnings.push(reason))('q')
      // A reference that does not resolve: ajv's error quotes it (cut at 300).
      schemaCheck({ type: 'object', properties: { a: { $ref: `#/${lead}${EMOJI.repeat(200)}` } } }, (reason) => void warnings.push(reason))({})
      expect(warnings).to.have.length(3)
      for (const warning of warnings) expectClean(warning)
    }
  })

  it('an ACP client\'s server name, type and command are quoted in a refusal without half an emoji', () => {
    const policy = { ...DEFAULT_SENT_SERVER_POLICY, commands: ['node'] }
    const refusals = [
      sentServersRefusal([{ type: 'sse', name: 'n'.repeat(63) + EMOJI, url: 'http://x/' }], policy),
      sentServersRefusal([{ type: 't'.repeat(31) + EMOJI, name: 'a' }], policy),
      sentServersRefusal([{ name: 'a', command: 'c'.repeat(199) + EMOJI }], policy),
    ]
    for (const refusal of refusals) expectClean(refusal)
    expect(refusals[0]).to.include(`"${'n'.repeat(63)}"`)
    expect(refusals[1]).to.include(`unknown type "${'t'.repeat(31)}"`)
    expect(refusals[2]).to.include(`the command "${'c'.repeat(199)}" is not`)
  })
})
