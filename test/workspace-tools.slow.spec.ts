// The quick start's read-only workspace tools: confinement to the root and capped output.
import { spawn } from 'node:child_process'
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
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

  it('treats only ".." segments as escapes: "..notes" and "a..b" are ordinary names', async () => {
    writeFileSync(join(root, '..notes'), 'dotted notes')
    mkdirSync(join(root, '..dir'))
    writeFileSync(join(root, '..dir', 'x..y.txt'), 'inner')
    expect((await call('read_file', { path: '..notes' })).content).to.equal('dotted notes')
    expect((await call('read_file', { path: '..dir/x..y.txt' })).content).to.equal('inner')
    expect((await call('list_files', { path: '..dir' })).content).to.equal('..dir/ (1 entries)\nx..y.txt')
    expect((await call('list_files', { path: '.' })).content.split('\n')).to.include('..notes')
    const parent = await call('read_file', { path: '../secret.txt' })
    expect(parent.isError).to.equal(true)
  })

  it('refuses a hard link (another of its names may be outside the root)', async () => {
    linkSync(join(base, 'secret.txt'), join(root, 'hard.txt'))
    const result = await call('read_file', { path: 'hard.txt' })
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/^Refused "hard.txt": it has 2 hard links/)
    expect(result.content).to.not.include('top secret')
    // search skips it instead of failing the whole search
    expect((await call('search_text', { query: 'secret' })).content).to.equal('No matches for "secret" in ".".')
  })

  it('refuses a FIFO without blocking on it', async () => {
    execFileSync('mkfifo', [join(root, 'pipe')])
    const result = await call('read_file', { path: 'pipe' })
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('is not a regular file')
  })

  /**
   * Runs `read` over and over while another process swaps root/swap.txt, atomically by rename,
   * between a regular file and a symlink to the outside secret. Returns the counts.
   */
  async function swapRace(read: () => Promise<{ content: string; isError?: boolean }>) {
    const swapper = spawn(process.execPath, ['-e', `
      const fs = require('fs'); const path = require('path')
      const [root, secret] = process.argv.slice(1)
      const target = path.join(root, 'swap.txt')
      process.stdout.write('ready\\n')
      for (let i = 0; ; i++) {
        const tmp = path.join(root, '.swap-' + (i % 2))
        try { fs.rmSync(tmp, { force: true }) } catch {}
        if (i % 2) fs.symlinkSync(secret, tmp); else fs.writeFileSync(tmp, 'inside content')
        fs.renameSync(tmp, target)
      }
    `, root, join(base, 'secret.txt')], { stdio: ['ignore', 'pipe', 'inherit'] })
    const exited = new Promise((resolve) => swapper.once('exit', resolve))
    let inside = 0
    let refused = 0
    let leaked = 0
    let reads = 0
    try {
      await new Promise((resolve) => swapper.stdout!.once('data', resolve))
      const deadline = Date.now() + 15_000
      for (; Date.now() < deadline && (reads < 1500 || !inside || !refused); reads++) {
        const result = await read()
        if (result.content.includes('top secret')) leaked++
        else if (!result.isError && result.content === 'inside content') inside++
        else if (result.isError) refused++
      }
    } finally {
      swapper.kill('SIGKILL')
      await exited
    }
    return { reads, inside, refused, leaked }
  }

  it('never returns the outside file while another process swaps a file for a symlink to it (bounded stress)', async function () {
    this.timeout(30_000)
    const { reads, inside, refused, leaked } = await swapRace(() => call('read_file', { path: 'swap.txt' }))
    expect(leaked, `reads that returned the outside file (inside ${inside}, refused ${refused})`).to.equal(0)
    // Both outcomes happened, so the race was really exercised.
    expect(inside).to.be.greaterThan(0)
    expect(refused).to.be.greaterThan(0)
    console.log(`      swap race: ${reads} reads, ${inside} read the inside file, ${refused} refused, ${leaked} returned the outside file`)
  })

  it('the portable check (inode comparison, used where /proc/self/fd is missing) holds the same race', async function () {
    this.timeout(30_000)
    const read = async () => {
      try {
        const { handle } = await workspaceTools.openConfined(root, 'swap.txt', 'inode')
        try {
          return { content: (await handle.readFile()).toString('utf8') }
        } finally {
          await handle.close()
        }
      } catch (error) {
        return { content: String(error), isError: true }
      }
    }
    const { inside, refused, leaked } = await swapRace(read)
    expect(leaked, `reads that returned the outside file (inside ${inside}, refused ${refused})`).to.equal(0)
    expect(inside).to.be.greaterThan(0)
    expect(refused).to.be.greaterThan(0)
  })
})
