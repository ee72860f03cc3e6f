// The quick start CLI in a real pseudo-terminal, and with a model whose output carries terminal
// escape sequences.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import fc from 'fast-check'
import pty from '@lydell/node-pty'
import { jsonLine, terminalLine, terminalLog, terminalText } from '@cordis-subagents/quickstart/terminal-text'
import { acpAgentProcesses, alive, buildQuickstart, CLI, eventually, offlineEnv, QUICKSTART, ROOT, runCli, withAbsolutePaths } from './helpers.js'

const FIXTURES = fileURLToPath(new URL('./fixtures/quickstart/', import.meta.url))
const HOSTILE = '\u001b]52;c;SGVsbG8=\u0007\u001b]0;pwned\u0007\u001b[2K\u009b31m\u202e\r'
/** Anything a terminal would act on: C0 controls but newline, DEL, C1, bidi controls. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
/**
 * What the sanitizer rewrites: CONTROL, plus line/paragraph separators (to a newline), invisible
 * characters, zero-width joiners (kept only between visible non-ASCII characters) and tag characters.
 * Text without any of these is printable and must come back unchanged.
 */
const REWRITTEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/gu

describe('quick start CLI: terminal safety', function () {
  this.timeout(60_000)

  before(() => buildQuickstart())

  describe('terminalText / terminalLine / jsonLine', () => {
    it('removes OSC 52, window titles, CSI (7- and 8-bit), bidi overrides and bare CRs, keeping the text', () => {
      expect(terminalLine(`label${HOSTILE}end`)).to.equal('labelend')
      expect(terminalText(`a${HOSTILE}b\r\nc\td`)).to.equal('ab\nc\td')
      expect(terminalLine('a\nb\tc')).to.equal('a b c')
      expect(terminalText('x\u001b[38;5;196mred\u001b[0m\u001bcy')).to.equal('xredy')
      // An unterminated OSC ends at the newline, so it cannot hide the rest of an answer.
      expect(terminalText('a\u001b]0;title never ends\nvisible')).to.equal('a\nvisible')
      expect(terminalText('plain text — ünïcödé ✓')).to.equal('plain text — ünïcödé ✓')
    })

    it('terminalLog keeps the logger\'s colours and removes everything else', () => {
      const line = `\u001b[33m[W]\u001b[0m model-openai answered: ${HOSTILE}done`
      // The 8-bit CSI in HOSTILE is removed too: only 7-bit ESC [ … m sequences are kept.
      expect(terminalLog(line)).to.equal('\u001b[33m[W]\u001b[0m model-openai answered: done')
      expect(terminalLog('a\u001b[2Kb\u001b[1;31mc')).to.equal('ab\u001b[1;31mc')
    })

    it('never lets a control character through (property), and keeps printable text as is', () => {
      fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const out = terminalText(text)
        return !CONTROL.test(out.replace(/\t/g, '')) && !CONTROL.test(terminalLine(text)) && !terminalLine(text).includes('\n')
      }), { numRuns: 2000 })
      fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 100 }), (text) => {
        const printable = text.replace(REWRITTEN, '')
        return terminalText(printable) === printable
      }), { numRuns: 2000 })
      // The counterexample CI found (seed 1397329435): a separator is rewritten, never kept as is.
      expect(terminalText('a\u2028b\u2029c')).to.equal('a\nb\nc')
    })

    it('handles 1 MiB of hostile input in linear time', () => {
      for (const text of ['\u001b['.repeat(512 * 1024), '\u001b]'.repeat(512 * 1024), '\u009b1'.repeat(512 * 1024), 'a\u0007'.repeat(512 * 1024)]) {
        const started = Date.now()
        terminalText(text)
        expect(Date.now() - started).to.be.below(3_000)
      }
    })

    it('jsonLine keeps the data exact while escaping every control character', () => {
      const value = { answer: `x${HOSTILE}y\u2028z` }
      const line = jsonLine(value)
      expect(CONTROL.test(line)).to.equal(false)
      expect(line).to.not.include('\u2028')
      expect(JSON.parse(line)).to.deep.equal(value)
    })
  })

  describe('with a model that answers with escape sequences', () => {
    let dir: string
    let config: string
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'quickstart-hostile-'))
      config = join(dir, 'cordis.yml')
      writeFileSync(config, readFileSync(join(FIXTURES, 'hostile.yml'), 'utf8')
        .replace('HOSTILE_MODEL_PATH', JSON.stringify(join(FIXTURES, 'hostile-model.mjs'))))
    })
    after(() => rmSync(dir, { recursive: true, force: true }))

    it('prints labels, step text and the answer without any control character', async () => {
      const cli = runCli(['--config', config, 'go'])
      expect(await cli.exited, cli.stderr()).to.equal(0)
      const out = cli.stdout()
      expect(out).to.include('┌ subagent → spawn: "labelend" started')
      expect(out).to.include('· main · step 1: thinkingaloud')
      expect(out).to.include('\nanswer:\nfinalanswer\nsecond line\n')
      expect(CONTROL.test(out), JSON.stringify(out)).to.equal(false)
    })

    it('--json keeps the exact text, escaped, so printing it runs nothing', async () => {
      const cli = runCli(['--json', '--config', config, 'go'])
      expect(await cli.exited, cli.stderr()).to.equal(0)
      expect(CONTROL.test(cli.stdout().trimEnd())).to.equal(false)
      const result = JSON.parse(cli.stdout())
      expect(result.answer).to.equal(`final${HOSTILE}answer\nsecond line`)
      expect(result.delegations[0].label).to.equal(`label${HOSTILE}end`)
    })
  })

  describe('in a pseudo-terminal (--interactive)', () => {
    /** The CLI in a pty on a copy of cordis.yml whose ACP child also replies slowly; `done` when the terminal shows `pattern`. */
    function slowAcpTerminal(dir: string) {
      const config = join(dir, 'cordis.yml')
      const copy = withAbsolutePaths(readFileSync(join(QUICKSTART, 'cordis.yml'), 'utf8')).replace(/(\n {4}env:\n)/, '$1      QUICKSTART_DEMO_DELAY: true\n')
      expect(copy).to.include('QUICKSTART_DEMO_DELAY: true')
      writeFileSync(config, copy)
      const env = offlineEnv({ QUICKSTART_DEMO_DELAY: '1500' }) as Record<string, string>
      const term = pty.spawn(process.execPath, [CLI, '--interactive', '--verbose', '--config', config], { cwd: ROOT, env, cols: 200, rows: 50, name: 'xterm' })
      let out = ''
      const watchers = new Set<() => void>()
      term.onData((data) => { out += data; for (const check of watchers) check() })
      const exited = new Promise<{ exitCode: number }>((resolve) => term.onExit(resolve))
      const seen = (pattern: RegExp, timeout = 45_000) => new Promise<RegExpMatchArray>((resolve, reject) => {
        const timer = setTimeout(() => { watchers.delete(check); reject(new Error(`timed out waiting for ${pattern}; terminal so far:\n${out}`)) }, timeout)
        const check = () => {
          const match = out.match(pattern)
          if (!match) return
          clearTimeout(timer)
          watchers.delete(check)
          resolve(match)
        }
        watchers.add(check)
        check()
      })
      return { term, exited, seen, output: () => out }
    }

    it('Ctrl-C during an ACP child\'s turn cancels it politely (session/cancel): its line says aborted, the agent exits by itself', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'quickstart-ctrl-c-'))
      const { term, exited, seen, output } = slowAcpTerminal(dir)
      try {
        await seen(/\n(?:\u001b\[[0-9;]*[A-Za-z])*> /)
        term.write('\r')
        const [, pid] = await seen(/subagent_acp → acp: .* started \(session-(\d+)-[0-9a-f-]+\)/)
        // Raw mode: the byte 0x03 reaches readline, which the CLI turns into its SIGINT handling.
        term.write('\u0003')
        expect((await exited).exitCode, output()).to.equal(0)
        const out = output()
        expect(out).to.match(/└ Root workspace scripts \(separate process\): aborted in /)
        expect(out).to.not.match(/Root workspace scripts \(separate process\): error/)
        // Without the fix provider-acp's exit safety net took the emitted SIGINT for its own and SIGKILLed the group.
        expect(out).to.include(`agent process ${pid} ended (exited with code 0)`)
        expect(out).to.not.include('killed by SIGKILL')
        expect(await eventually(() => !alive(Number(pid)))).to.equal(true)
        expect(acpAgentProcesses()).to.deep.equal([])
      } finally {
        try { term.kill() } catch {}
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))])
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it('a second Ctrl-C forces: exit 130 at once, and no agent process is left', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'quickstart-ctrl-c-'))
      const { term, exited, seen, output } = slowAcpTerminal(dir)
      try {
        await seen(/\n(?:\u001b\[[0-9;]*[A-Za-z])*> /)
        term.write('\r')
        const [, pid] = await seen(/subagent_acp → acp: .* started \(session-(\d+)-[0-9a-f-]+\)/)
        term.write('\u0003')
        // The second press as soon as the CLI says the first was handled: it closed its input before saying so (the
        // terminal is back in cooked mode, so this one is a real SIGINT), and the shutdown has only begun (the ACP
        // agent still runs). Waiting for a cancelled delegation's line instead raced the rest of the shutdown.
        await seen(/Ctrl-C again to force/)
        term.write('\u0003')
        expect((await exited).exitCode, output()).to.equal(130)
        expect(await eventually(() => !alive(Number(pid)))).to.equal(true)
        expect(acpAgentProcesses()).to.deep.equal([])
      } finally {
        try { term.kill() } catch {}
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))])
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it('Ctrl-C during a turn quits at once, reaps the ACP process and restores nothing left behind', async () => {
      // Slow replies keep the turn going for many seconds.
      const env = offlineEnv({ QUICKSTART_DEMO_DELAY: '2000' }) as Record<string, string>
      const term = pty.spawn(process.execPath, [CLI, '--interactive'], { cwd: ROOT, env, cols: 200, rows: 50, name: 'xterm' })
      let out = ''
      const watchers = new Set<() => void>()
      term.onData((data) => { out += data; for (const check of watchers) check() })
      const exited = new Promise<{ exitCode: number; signal?: number }>((resolve) => term.onExit(resolve))
      const seen = (pattern: RegExp, timeout = 30_000) => new Promise<RegExpMatchArray>((resolve, reject) => {
        const timer = setTimeout(() => { watchers.delete(check); reject(new Error(`timed out waiting for ${pattern}; terminal so far:\n${out}`)) }, timeout)
        const check = () => {
          const match = out.match(pattern)
          if (!match) return
          clearTimeout(timer)
          watchers.delete(check)
          resolve(match)
        }
        watchers.add(check)
        check()
      })
      try {
        await seen(/\n(?:\u001b\[[0-9;]*[A-Za-z])*> /)
        term.write('\r')
        const [, pid] = await seen(/subagent_acp → acp: .* started \(session-(\d+)-[0-9a-f-]+\)/)
        expect(alive(Number(pid))).to.equal(true)
        const pressed = Date.now()
        // The terminal is in raw mode (readline): Ctrl-C arrives as the byte 0x03, not as a signal.
        term.write('\u0003')
        const exit = await exited
        const took = Date.now() - pressed
        expect(exit.exitCode, out).to.equal(0)
        // Without the fix the keypress waits until the turn ends (10+ s with these delays).
        expect(took, out).to.be.below(2_000)
        expect(await eventually(() => out.includes('^C: cancelling in-flight delegations and shutting down')), out).to.equal(true)
        expect(await eventually(() => !alive(Number(pid)))).to.equal(true)
        expect(acpAgentProcesses()).to.deep.equal([])
      } finally {
        try { term.kill() } catch {}
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))])
      }
    })
  })
})
