/// <reference types="mocha" />
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Logger } from 'cordis'
import type { SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import { createAcpProvider, liveProcessGroups } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import {
  assertNoLeftovers, FAST, fakeParent, fixtureArgs, fixtureProcesses, fixtureProvider, groupMembers, isAlive, logger, reapAll, rejection,
  request, until,
} from './helpers.js'

describe('provider-acp: runs against fixture agents (real subprocesses)', () => {
  const runs: SubagentRun[] = []

  async function start(mode: string, arg?: string, options = {}, overrides = {}) {
    const req = request(overrides)
    const run = await fixtureProvider(mode, arg, options).start(req)
    runs.push(run)
    return { run: run as AcpRun, updates: req.updates }
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  describe('prompt turn', () => {
    it('streams text between tool calls; output is the text after the last tool call; updates and usage are forwarded', async () => {
      const { run, updates } = await start('stream')
      expect(run.id).to.equal('run-1')
      expect(run.childId).to.equal('sess-1')
      const result = await run.result
      expect(result).to.deep.equal({
        stopReason: 'completed',
        output: 'Final answer: 42',
        usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 2 },
      })
      expect(updates.map((update) => update.kind)).to.deep.equal([
        'text', 'tool-call', 'tool-result', 'thought', 'plan', 'text', 'tool-call', 'tool-result', 'text', 'text', 'usage',
      ])
      expect(updates[10]).to.deep.equal({ kind: 'usage', usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 2 } })
      expect(updates[1]).to.deep.include({ kind: 'tool-call', tool: 'Read README.md' })
      expect(updates[2]).to.deep.include({ kind: 'tool-result', isError: false })
      expect(updates[3]).to.deep.equal({ kind: 'thought', text: 'Thinking about it' })
      expect(updates[4]).to.deep.equal({ kind: 'plan', text: '[completed] Read the files\n[in_progress] Answer' })
      expect(updates[7]).to.deep.include({ kind: 'tool-result', tool: 'Run tests', isError: true })
    })

    it('falls back to all message text when nothing follows the last tool call', async () => {
      const { run } = await start('text-then-tool')
      const result = await run.result
      expect(result.stopReason).to.equal('completed')
      expect(result.output).to.equal('Summary written before the last tool call.')
    })

    it('introduces itself in initialize with this package\'s name and version (read from its package.json)', async () => {
      const { run } = await start('client-info')
      const result = await run.result
      const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
      expect(JSON.parse(result.output)).to.deep.equal({ name: 'cordis-subagents', title: 'cordis-subagents provider-acp', version: manifest.version })
    })

    describe('stop reasons (the six agents run concurrently, then each is checked)', () => {
      const stops: Array<[string, string, RegExp | undefined]> = [
        ['end_turn', 'completed', undefined],
        ['max_tokens', 'max-tokens', /max_tokens/],
        ['refusal', 'refusal', /refus/],
        ['cancelled', 'aborted', /cancelled its turn by itself/],
        ['max_turn_requests', 'error', /max_turn_requests/],
        ['no_such_reason', 'error', /unknown stop reason "no_such_reason"/],
        // Names of Object.prototype members are unknown stop reasons too, not a function.
        ['toString', 'error', /unknown stop reason "toString"/],
      ]
      const results = new Map<string, SubagentResult>()

      before(async () => {
        await Promise.all(stops.map(async ([acpReason]) => {
          const run = await fixtureProvider('stop', acpReason).start(request())
          try {
            results.set(acpReason, await run.result)
          } finally {
            await run.dispose()
          }
        }))
      })

      for (const [acpReason, stopReason, diagnostic] of stops) {
        it(`maps stop reason ${acpReason} to ${stopReason}, keeping the partial output`, () => {
          const result = results.get(acpReason)!
          expect(result.stopReason).to.equal(stopReason)
          expect(result.output).to.equal('partial text')
          if (diagnostic) expect(result.diagnostic).to.match(diagnostic)
          else expect(result).to.not.have.property('diagnostic')
        })
      }
    })

    it('runs in the parent\'s cwd with SUBAGENT_DEPTH, no fs/terminal capabilities and the configured mcpServers', async () => {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), 'acp-cwd-')))
      try {
        const mcpServers = [{ name: 'files', command: '/bin/true', args: ['x'], env: [] }]
        const { run } = await start('echo', '', { mcpServers }, { parent: fakeParent(dir, 2), depth: 3 })
        const echo = JSON.parse((await run.result).output)
        expect(echo.prompt).to.equal('Do the task.')
        expect(echo.cwd).to.equal(dir)
        expect(echo.sessionCwd).to.equal(dir)
        expect(echo.depth).to.equal('3')
        expect(echo.mcpServers).to.deep.equal(mcpServers)
        expect(echo.clientCapabilities).to.deep.include({ fs: { readTextFile: false, writeTextFile: false }, terminal: false })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it('a configured cwd (relative to the base directory) wins over the parent\'s', async () => {
      const base = realpathSync(mkdtempSync(join(tmpdir(), 'acp-base-')))
      try {
        const { mkdirSync } = await import('node:fs')
        mkdirSync(join(base, 'work'))
        const { run } = await start('echo', '', { cwd: 'work', baseDir: base })
        const echo = JSON.parse((await run.result).output)
        expect(echo.cwd).to.equal(join(base, 'work'))
        expect(echo.sessionCwd).to.equal(join(base, 'work'))
      } finally {
        rmSync(base, { recursive: true, force: true })
      }
    })

    it('inherit: all drops credential-shaped variables unless configured; env can set, pass through and remove', async () => {
      const saved = { ...process.env }
      Object.assign(process.env, {
        ACP_TEST_API_KEY: 'host-key-value', ACP_TEST_TOKEN: 'host-token-value', ACP_TEST_PASSWORD: 'hunter22',
        ACP_TEST_PLAIN: 'plain', ACP_TEST_REMOVED: 'gone', ACP_TEST_CREDENTIALS_FILE: '/x',
      })
      try {
        const names = 'ACP_TEST_API_KEY,ACP_TEST_TOKEN,ACP_TEST_PASSWORD,ACP_TEST_PLAIN,ACP_TEST_REMOVED,ACP_TEST_CREDENTIALS_FILE,ACP_TEST_SET,ACP_TEST_SECRET'
        const env = { ACP_TEST_TOKEN: true, ACP_TEST_REMOVED: false, ACP_TEST_SET: 'configured', ACP_TEST_SECRET: 'configured-secret' }
        const { run } = await start('echo', names, { env, inherit: 'all' })
        const echo = JSON.parse((await run.result).output)
        expect(echo.env).to.deep.equal({
          ACP_TEST_API_KEY: null, // credential-shaped: dropped
          ACP_TEST_TOKEN: 'host-token-value', // listed as true: passed through
          ACP_TEST_PASSWORD: null,
          ACP_TEST_PLAIN: 'plain',
          ACP_TEST_REMOVED: null, // listed as false: removed
          ACP_TEST_CREDENTIALS_FILE: null,
          ACP_TEST_SET: 'configured',
          ACP_TEST_SECRET: 'configured-secret', // explicitly configured
        })
      } finally {
        for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key]
      }
    })

    it('survives junk lines on stdout', async () => {
      const { run } = await start('junk')
      const result = await run.result
      expect(result.stopReason).to.equal('completed')
      expect(result.output).to.equal('Final answer: 42')
    })

    it('keeps up with an agent that floods stderr', async () => {
      const { run } = await start('flood')
      const result = await run.result
      expect(result).to.deep.equal({ stopReason: 'completed', output: 'survived the flood' })
    })
  })

  describe('permissions', () => {
    it('permission: reject answers with a reject option and notes the denial', async () => {
      const { run, updates } = await start('permission', 'with-reject')
      const result = await run.result
      expect(result.stopReason).to.equal('completed')
      expect(result.output).to.equal('chose no')
      expect(result.diagnostic).to.match(/Permission requests denied \(permission: reject\): "Delete build\/" \(answered "Reject"\)/)
      expect(result.diagnostic).to.match(/permission: allow/)
      expect(updates).to.deep.include({ kind: 'status', text: 'permission denied: Delete build/' })
    })

    it('permission: reject answers cancelled only when no reject option exists', async () => {
      const { run } = await start('permission', 'no-reject')
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.diagnostic).to.match(/"Delete build\/" \(no reject option was offered, answered cancelled\)/)
    })

    it('permission: allow picks the allow-once option', async () => {
      const { run } = await start('permission', 'with-reject', { permission: 'allow' })
      const result = await run.result
      expect(result).to.deep.equal({ stopReason: 'completed', output: 'chose yes' })
    })
  })

  describe('cancellation and teardown', () => {
    it('cancel sends session/cancel; an agent that honours it ends the run aborted with its partial output', async () => {
      const { run, updates } = await start('slow')
      await until(() => updates.some((update) => update.text === 'working on it'), 'the agent\'s first message chunk')
      run.cancel('the parent changed its mind')
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.output).to.equal('working on it')
      expect(result.diagnostic).to.equal('Cancelled (the parent changed its mind).')
    })

    it('aborting the request signal after the hand-over cancels the run', async () => {
      const controller = new AbortController()
      const { run } = await start('slow', undefined, {}, { signal: controller.signal })
      controller.abort(new Error('timeout of the parent'))
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.diagnostic).to.match(/timeout of the parent/)
    })

    it('an agent that ignores cancel and SIGTERM still ends aborted and its group is SIGKILLed', async () => {
      const { run } = await start('ignore-sigterm')
      const pid = run.pid!
      run.cancel('stop now')
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.output).to.equal('busy, not listening')
      expect(result.diagnostic).to.match(/did not end its turn within cancelGrace \(200 ms\)/)
      await run.dispose()
      await reapAll()
      expect(groupMembers(pid)).to.deep.equal([])
    })

    it('an agent that ends its turn late in cancelGrace, then ignores EOF and SIGTERM, is gone within cancelGrace + killGrace of the cancel', async function () {
      this.timeout(10_000)
      const { run, updates } = await start('late-cancel', '700', { cancelGrace: 1000, killGrace: 1000 })
      await until(() => updates.length > 0, 'the first progress update')
      const pid = run.pid!
      const cancelled = performance.now()
      run.cancel('stop soon')
      expect((await run.result).stopReason).to.equal('aborted')
      await run.dispose()
      await reapAll()
      const elapsed = performance.now() - cancelled
      expect(groupMembers(pid)).to.deep.equal([])
      // Loose bound: the grace is not spent twice (that took ~2700 ms here).
      expect(elapsed, `gone ${Math.round(elapsed)} ms after cancel`).to.be.below(1000 + 1000 + 500)
    })

    it('an agent that answers session/prompt with a JSON-RPC error ends the run as error with that error; it may exit by itself', async () => {
      const logs: string[] = []
      const saved = Logger.targets.splice(0, Logger.targets.length, {
        levels: { base: 3 },
        record: (record) => { logs.push(record.content) },
      })
      try {
        // The path under test is "exits by itself at EOF", not the 50 ms default: a loaded machine
        // can take longer than that to end a Node process, so the grace here is generous.
        const { run } = await start('prompt-error', undefined, { exitGrace: 20_000 })
        const result = await run.result
        expect(result.stopReason).to.equal('error')
        expect(result.output).to.equal('trying the model')
        expect(result.diagnostic).to.match(/^The agent answered session\/prompt with an error: Internal error: model said 401 \(code -32603\)\./)
        expect(result.diagnostic).to.not.match(/connection/)
        await run.dispose()
        await reapAll()
        // The teardown grace: the agent exits at EOF instead of being SIGTERMed at once.
        expect(logs.find((line) => line.includes(`agent process ${run.pid} ended`))).to.match(/exited with code 0/)
      } finally {
        Logger.targets.splice(0, Logger.targets.length, ...saved)
      }
    })

    it('the data of a session/prompt error is part of the diagnostic', async () => {
      const { run } = await start('prompt-error', 'data')
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.match(/^The agent answered session\/prompt with an error: Internal error: model said 401 \(code -32603; data: \{"status":401\}\)\./)
    })

    it('dispose() mid-prompt cancels, is idempotent and resolves with the result; the provider then reaps the process', async () => {
      const { run } = await start('ignore-cancel')
      const pid = run.pid!
      expect(isAlive(pid)).to.equal(true)
      // The after-each leftover check would see it.
      expect(fixtureProcesses().map((entry) => entry.pid)).to.include(pid)
      const first = run.dispose()
      const second = run.dispose()
      expect(second).to.equal(first)
      await first
      await reapAll()
      expect(isAlive(pid)).to.equal(false)
      expect((await run.result).stopReason).to.equal('aborted')
    })

    it('a process that dies mid-prompt ends the run at once as error with exit code and scrubbed stderr tail', async () => {
      const { run } = await start('crash')
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.output).to.equal('about to crash')
      expect(result.diagnostic).to.match(/exited with code 3 during the prompt/)
      expect(result.diagnostic).to.match(/fatal: boom/)
      expect(result.diagnostic).to.not.match(/sk-live|abc\.def\.ghi/)
    })

    it('the stderr tail in a diagnostic is bounded (4 KiB) and keeps the last lines', async () => {
      const { run } = await start('flood', 'crash')
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(Buffer.byteLength(result.diagnostic!)).to.be.at.most(4096)
      expect(result.diagnostic).to.match(/exited with code 1/)
      expect(result.diagnostic!.trimEnd().endsWith('flood done'), result.diagnostic!.slice(0, 300) + ' ... ' + result.diagnostic!.slice(-100)).to.equal(true)
    })

    it('grandchildren die with the group when the run completes', async () => {
      const { run } = await start('grandchild', 'complete')
      const result = await run.result
      const grandchild = Number(/grandchild (\d+)/.exec(result.output)![1])
      expect(isAlive(grandchild)).to.equal(true)
      await run.dispose()
      await reapAll()
      expect(isAlive(grandchild)).to.equal(false)
      expect(groupMembers(run.pid!)).to.deep.equal([])
    })

    it('grandchildren die with the group when the agent crashes and leaves them behind', async () => {
      const { run } = await start('grandchild', 'crash')
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.match(/exited with code 5/)
      const grandchild = Number(/grandchild (\d+)/.exec(result.output)![1])
      await run.dispose()
      await reapAll()
      expect(isAlive(grandchild)).to.equal(false)
    })

    it('grandchildren die with the group on cancel', async () => {
      const { run, updates } = await start('grandchild')
      await until(() => updates.length > 0, 'the first progress update')
      const grandchild = Number(/grandchild (\d+)/.exec(updates[0].text!)![1])
      run.cancel()
      expect((await run.result).stopReason).to.equal('aborted')
      await run.dispose()
      await reapAll()
      expect(isAlive(grandchild)).to.equal(false)
    })
  })

  describe('startup failures reject and leave nothing running (the agents start concurrently)', () => {
    const failures = new Map<string, Error & { code?: string }>()

    before(async () => {
      const cases: Array<[string, Promise<unknown>]> = [
        ['hang-init', fixtureProvider('hang-init', undefined, { startupTimeout: 400 }).start(request())],
        ['version', fixtureProvider('version', '2').start(request())],
        ['auth', fixtureProvider('auth').start(request())],
        ['crash-init', fixtureProvider('crash-init').start(request())],
        ['fail-new', fixtureProvider('fail-new').start(request())],
      ]
      await Promise.all(cases.map(async ([mode, starting]) => failures.set(mode, await rejection(starting))))
    })

    it('a hang in initialize hits startupTimeout (ACP_STARTUP_TIMEOUT)', () => {
      const error = failures.get('hang-init')!
      expect(error.code).to.equal('ACP_STARTUP_TIMEOUT')
      expect(error.message).to.match(/did not finish initialize within startupTimeout \(400 ms\)/)
    })

    it('a wrong protocol version is rejected (ACP_PROTOCOL_VERSION)', () => {
      const error = failures.get('version')!
      expect(error.code).to.equal('ACP_PROTOCOL_VERSION')
      expect(error.message).to.match(/protocol version 2; this client speaks only ACP protocol version 1/)
    })

    it('an agent that requires authentication fails naming its auth methods (ACP_AUTH_REQUIRED)', () => {
      const error = failures.get('auth')!
      expect(error.code).to.equal('ACP_AUTH_REQUIRED')
      expect(error.message).to.match(/"oauth" \(Log in with Example\), "api-key" \(Use EXAMPLE_API_KEY\)/)
    })

    it('an agent that exits during initialize fails with its exit code and stderr (ACP_STARTUP_FAILED)', () => {
      const error = failures.get('crash-init')!
      expect(error.code).to.equal('ACP_STARTUP_FAILED')
      expect(error.message).to.match(/exited with code 7 during initialize/)
      expect(error.message).to.match(/crashing during initialize/)
    })

    it('a failing session/new is ACP_STARTUP_FAILED', () => {
      const error = failures.get('fail-new')!
      expect(error.code).to.equal('ACP_STARTUP_FAILED')
      expect(error.message).to.match(/session\/new/)
      expect(error.message).to.match(/no sessions today/)
    })

    it('aborting during the handshake rejects ABORTED after killing the process', async () => {
      const controller = new AbortController()
      const before = new Set(liveProcessGroups())
      const starting = fixtureProvider('hang-init').start(request({ signal: controller.signal }))
      // The agent's process group exists once it is spawned; the handshake starts at once.
      await until(() => liveProcessGroups().some((group) => !before.has(group)), 'the agent process to be spawned')
      controller.abort()
      const error = await rejection(starting)
      expect(error.code).to.equal('ABORTED')
      expect(error.message).to.match(/aborted during initialize/)
    })

    it('an already aborted signal rejects ABORTED without spawning', async () => {
      const controller = new AbortController()
      controller.abort()
      const error = await rejection(fixtureProvider('stream').start(request({ signal: controller.signal })))
      expect(error.code).to.equal('ABORTED')
    })

    it('a command that does not exist is ACP_SPAWN_FAILED', async () => {
      const provider = createAcpProvider({ command: 'no-such-acp-agent-xyz', logger, ...FAST })
      const error = await rejection(provider.start(request()))
      expect(error.code).to.equal('ACP_SPAWN_FAILED')
      expect(error.message).to.match(/no-such-acp-agent-xyz.*ENOENT/)
    })

    it('a parent cwd that does not exist is ACP_SPAWN_FAILED naming the directory', async () => {
      const provider = createAcpProvider({ command: process.execPath, args: fixtureArgs('stream'), logger, ...FAST })
      const error = await rejection(provider.start(request({ parent: fakeParent('/no/such/dir/acp') })))
      expect(error.code).to.equal('ACP_SPAWN_FAILED')
      expect(error.message).to.match(/\/no\/such\/dir\/acp/)
    })
  })
})
