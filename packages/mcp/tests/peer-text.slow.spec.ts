// Issue 39.13: what a hostile MCP server says about its tools (descriptions, titles, schema
// annotations, progress messages) reaches the model and a person without escapes, C1 controls,
// bidi controls or hidden characters; what the server validates (enum values) stays exact.
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { type Context, Logger } from 'cordis'
import type { ToolUpdate } from '@cordis-subagents/tools'
import { client, eventually, makeExec, setup } from './helpers.js'

const SERVER = fileURLToPath(new URL('./fixtures/peer-text-server.mjs', import.meta.url))
/** What must never come out: C0 but tab and newline, DEL, C1, bidi controls, zero-width space. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069]/

describe('@cordis-subagents/mcp: text from a hostile server (issue 39.13)', function () {
  this.timeout(30_000)
  let ctx: Context

  const logged: string[] = []
  const target = { colors: 0, showTime: '', print: (text: string) => void logged.push(text), levels: { base: 2 } } as unknown as Logger.Target

  before(() => { Logger.targets.push(target) })
  after(() => { Logger.targets.splice(Logger.targets.indexOf(target), 1) })

  beforeEach(async () => {
    logged.length = 0
    ctx = (await setup()).ctx
    ctx.plugin(client, { name: 'hx', command: process.execPath, args: [SERVER] })
    await eventually('hx tools mounted', () => ctx.tools.has('hx__mark') && ctx.tools.has('hx__untitled'))
  })
  afterEach(() => ctx.stop())

  it('logs the warning for a schema it cannot check without the escapes of the reference or pattern it quotes', async () => {
    // The host compiles a tool's check at its first call.
    for (const name of ['hx__ref', 'hx__pat']) await ctx.tools.view().execute({ name, input: { a: 'x' } }, makeExec())
    await eventually('both warnings logged', () => ['hx__ref', 'hx__pat'].every((name) => logged.some((line) => line.includes(name))))
    const warnings = logged.filter((line) => line.includes('hx__ref') || line.includes('hx__pat'))
    expect(warnings.join('\n')).to.include('#/nowhere').and.include('(?<=x)')
    for (const line of warnings) expect(CONTROL.test(line), JSON.stringify(line)).to.equal(false)
  })

  it('cleans the description, the title and every annotation of the input schema; keeps enum values exact', async () => {
    const mark = ctx.tools.list().find((tool) => tool.name === 'hx__mark')!
    expect(mark.description).to.equal('Marks a file.\nSecond line\tindented.')
    const schema = JSON.stringify(mark.parameters)
    // The enum value is the server's data: the only place the override may stay.
    expect(CONTROL.test(schema.replace('red\u202e', 'red'))).to.equal(false)
    const properties = (mark.parameters as { properties: Record<string, Record<string, unknown>> }).properties
    expect(properties.colour).to.deep.include({ description: 'The colour', enum: ['red\u202e', 'green'], enumDescriptions: ['warm', 'cool'] })
    expect(properties.default).to.have.property('description', 'A property named like a keyword')
    expect(properties.default).to.have.nested.property('properties.deep.$comment', 'deep')
    expect(properties.items).to.have.nested.property('items[0].title', 'tuple')
    expect(properties.items).to.have.nested.property('anyOf[0].description', 'any')
    expect(mark.parameters).to.have.property('title', 'Input')
    const untitled = ctx.tools.list().find((tool) => tool.name === 'hx__untitled')!
    expect(untitled.description).to.equal('Only a title')
  })

  it('a call with the exact enum value reaches the server', async () => {
    const result = await ctx.tools.view().execute({ name: 'hx__mark', input: { colour: 'red\u202e' } }, makeExec())
    expect(result.isError).to.equal(undefined)
    expect(JSON.parse(result.content)).to.deep.equal({ colour: 'red\u202e' })
  })

  it('a progress message reaches the tool\'s updates cleaned', async () => {
    const updates: ToolUpdate[] = []
    const controller = new AbortController()
    const pending = ctx.tools.view().execute({ name: 'hx__progress', input: {} }, makeExec({ signal: controller.signal, onUpdate: (u) => { updates.push(u) } }))
    await eventually('the progress update', () => updates.length > 0)
    controller.abort(new Error('done'))
    await pending
    expect(updates[0]).to.include({ kind: 'progress', text: 'halfway' })
  })
})
