// The quick start's read-only workspace tools: confinement to the root and capped output.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import * as workspaceTools from '@cordis-subagents/quickstart/workspace-tools'

describe('quickstart workspace-tools', () => {
  let base: string
  let root: string
  let ctx: Context
  const exec = { signal: new AbortController().signal, agent: { id: 'test', depth: 0 }, toolCallId: 't' }
  const call = (name: string, input: unknown) => ctx.tools.view().execute({ name, input }, exec)

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'ws-tools-'))
    root = join(base, 'root')
    mkdirSync(join(root, 'src'), { recursive: true })
    mkdirSync(join(root, 'node_modules'))
    writeFileSync(join(root, 'src', 'a.txt'), 'hello world\nsecond line with Needle\n')
    writeFileSync(join(root, 'big.txt'), 'x'.repeat(5000))
    writeFileSync(join(base, 'secret.txt'), 'top secret')
    symlinkSync(join(base, 'secret.txt'), join(root, 'escape.txt'))
    symlinkSync(base, join(root, 'escape-dir'))
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(workspaceTools, { root, maxReadBytes: 1000 } as any)
    await ctx.start()
  })

  afterEach(async () => {
    await ctx.stop()
    rmSync(base, { recursive: true, force: true })
  })

  it('lists, reads and searches inside the root', async () => {
    const listing = await call('list_files', { path: '.' })
    expect(listing.isError).to.equal(undefined)
    expect(listing.content.split('\n')).to.include.members(['src/', 'big.txt'])
    expect(listing.content).to.not.include('node_modules')
    expect((await call('read_file', { path: 'src/a.txt' })).content).to.equal('hello world\nsecond line with Needle\n')
    expect((await call('search_text', { query: 'needle' })).content).to.equal('src/a.txt:2: second line with Needle')
  })

  it('caps what read_file returns and says so', async () => {
    const result = await call('read_file', { path: 'big.txt' })
    expect(result.content).to.equal(`${'x'.repeat(1000)}\n... [truncated: showing 1000 of 5000 bytes]`)
  })

  for (const [tool, input] of [
    ['read_file', { path: '../secret.txt' }],
    ['read_file', { path: 'src/../../secret.txt' }],
    ['read_file', { path: '/etc/passwd' }],
    ['read_file', { path: 'escape.txt' }],
    ['list_files', { path: 'escape-dir' }],
    ['list_files', { path: '..' }],
    ['search_text', { query: 'secret', path: 'escape-dir' }],
  ] as const) {
    it(`refuses ${tool} ${JSON.stringify(input)} (outside the root)`, async () => {
      const result = await call(tool, input)
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Refused /)
      expect(result.content).to.not.include('top secret')
    })
  }

  it('does not follow symlinks while searching', async () => {
    const result = await call('search_text', { query: 'top secret' })
    expect(result.content).to.equal('No matches for "top secret" in ".".')
  })
})
