/// <reference types="mocha" />
// The bin's wait for its config's entries to apply (≤ 30 s, then "does not serve MCP") is measured on the monotonic
// clock: the wall clock stepping forward 1 h while it waits (a fixture plugin steps it in the bin's process, then
// never finishes loading) does not end the wait early.
import { spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { CORE_ENTRIES, eventually, tempDir } from './helpers.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const SOURCE = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
const STEPS = fileURLToPath(new URL('./fixtures/clock-step-never-loads.mjs', import.meta.url))

describe('cordis-subagents-mcp: the startup wait across a wall-clock step', function () {
  this.timeout(60_000)
  let dir: string

  beforeEach(() => { dir = tempDir('mcp-bin-clock-') })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('the wall clock stepping forward 1 h while an entry loads does not end the wait (no "does not serve MCP")', async () => {
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, `${CORE_ENTRIES}\n- id: stuck\n  name: ${JSON.stringify(STEPS)}\n`)
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'cordis-subagents-source', '--no-experimental-require-module', SOURCE, file], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }, stdio: ['pipe', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const closed = new Promise((resolve) => child.once('close', resolve))
    let exited = false
    void closed.then(() => { exited = true })
    try {
      await eventually('the fixture stepped the wall clock', () => stderr.includes('the wall clock stepped forward 1 h') || exited, 30_000)
      // The wait is 30 s; the old wall-clock deadline ended it at the step.
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect(stderr, 'the bin gave up waiting').not.to.include('does not serve MCP')
      expect(exited, 'the bin exited').to.equal(false)
    } finally {
      child.kill('SIGKILL')
      await closed
      child.stdin.destroy()
    }
  })
})
