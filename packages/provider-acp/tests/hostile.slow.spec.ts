/// <reference types="mocha" />
// Hostile and real-agent-shaped fixture agents (tests/fixtures/hostile.mjs) against the provider:
// event-loop safety, bounded memory, the env policy, containment, usage, errors (the hand-back: hand-back.slow.spec.ts).
import { expect } from 'chai'
import { Budget } from '@cordis-subagents/agent'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import { cgroupBase, MAX_MESSAGE_BYTES } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import {
  assertNoLeftovers, fakeParent, harness, heartbeat, hostileProvider, isAlive, LEAKED, reapAll, rejection, request, until,
} from './helpers.js'

/** A blocked event loop shows as a gap between 10 ms ticks; 1 s is generous on a loaded 2-core box. */
const MAX_GAP_MS = 1000

describe('provider-acp: hostile agents', function () {
  this.timeout(30_000)
  const runs: SubagentRun[] = []

  async function start(mode: string, arg?: string, options = {}, overrides = {}) {
    const req = request(overrides)
    const run = await hostileProvider(mode, arg, options).start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  describe('event loop: agent text is capped before it is scrubbed, and scrubbing is linear', () => {
    it('a 256 KiB backtracking-bait error message (and data) from session/prompt', async () => {
      const beat = heartbeat()
      try {
        const { run } = await start('redos-error')
        const result = await run.result
        expect(result.stopReason).to.equal('error')
        expect(result.diagnostic).to.match(/^The agent answered session\/prompt with an error: a\.a\.a\..*…? \(code -32603; data: /)
        expect(Buffer.byteLength(result.diagnostic!)).to.be.at.most(4096)
        expect(beat.maxGap(), 'event loop blocked (ms)').to.be.below(MAX_GAP_MS)
      } finally {
        beat.stop()
      }
    })

    it('a 256 KiB backtracking-bait permission title and option', async () => {
      const beat = heartbeat()
      try {
        const { run, updates } = await start('redos-permission')
        const result = await run.result
        expect(result.stopReason).to.equal('completed')
        expect(result.output).to.equal('answered selected')
        expect(result.diagnostic).to.match(/^Permission requests denied/)
        expect(Buffer.byteLength(result.diagnostic!)).to.be.at.most(4096)
        const status = updates.find((update) => update.kind === 'status')!
        expect(status.text!.length).to.be.at.most(4200)
        expect(beat.maxGap(), 'event loop blocked (ms)').to.be.below(MAX_GAP_MS)
      } finally {
        beat.stop()
      }
    })

    it('8 MB of bait on stderr with debug logging on: a bounded number of log lines, a scrubbed tail', async () => {
      const h = await harness()
      const beat = heartbeat()
      try {
        const { run } = await start('redos-stderr')
        const result = await run.result
        expect(result.stopReason).to.equal('error')
        expect(result.diagnostic).to.match(/exited with code 9 during the prompt/)
        expect(result.diagnostic).to.match(/last line$/)
        expect(result.diagnostic).to.not.match(/DB_PASSWORD=a/)
        const lines = h.logs.filter((log) => log.content.includes(`[acp ${run.pid}]`))
        expect(lines.length).to.be.within(100, 502)
        expect(lines.at(-1)!.content).to.match(/more stderr not logged/)
        expect(beat.maxGap(), 'event loop blocked (ms)').to.be.below(MAX_GAP_MS)
      } finally {
        beat.stop()
        await h.stop()
      }
    })
  })

  describe('memory: streaming is bounded during the turn', () => {
    it('8 agents each trying to stream 300 MB: each stops at maxStreamBytes (16 MiB here) with an error naming it; RSS stays bounded', async function () {
      const beat = heartbeat()
      try {
        const limit = 16 * 1024 * 1024
        const started = await Promise.all(Array.from({ length: 8 }, () => start('flood', '300', { maxStreamBytes: limit, maxOutputBytes: 256 * 1024 })))
        const results = await Promise.all(started.map(({ run }) => run.result))
        for (const result of results) {
          expect(result.stopReason).to.equal('error')
          expect(result.diagnostic).to.match(new RegExp(`^\\[ACP_STREAM_LIMIT\\] The agent sent more than maxStreamBytes \\(${limit} bytes\\)`))
          expect(result.diagnostic).to.match(/exceeded maxOutputBytes \(262144 bytes\)/)
          expect(Buffer.byteLength(result.output)).to.be.at.most(256 * 1024)
          expect(result.output).to.match(/^y+\n\n\[Output truncated by provider-acp: the agent sent \d+ bytes of message text; the first 261888 are kept \(maxOutputBytes 262144\)\.\]$/)
        }
        expect(beat.peakRssGrowth(), 'RSS growth (bytes)').to.be.below(400 * 1024 * 1024)
        expect(beat.maxGap(), 'event loop blocked (ms)').to.be.below(MAX_GAP_MS)
      } finally {
        beat.stop()
      }
    })

    it('8 agents streaming 100 MB each (800 MB) within the default ceiling complete; only maxOutputBytes of each is kept; RSS stays bounded', async function () {
      // 800 MB through 8 processes: seconds on a quiet machine, much longer beside stress-ng.
      this.timeout(180_000)
      const beat = heartbeat()
      try {
        const counts: number[] = []
        const started = await Promise.all(Array.from({ length: 8 }, (_, i) => {
          counts[i] = 0
          // Count progress instead of keeping it: this measures the provider, not the test's array.
          return start('flood', '100', { maxOutputBytes: 256 * 1024 }, { onUpdate: () => { counts[i]++ } })
        }))
        const results = await Promise.all(started.map(({ run }) => run.result))
        const kept = 256 * 1024 - 256
        for (const result of results) {
          expect(result.stopReason).to.equal('completed')
          expect(result.output).to.equal(`${'y'.repeat(kept)}\n\n[Output truncated by provider-acp: the agent sent ${100 * 1024 * 1024 + 3} bytes of message text; the first ${kept} are kept (maxOutputBytes 262144).]`)
          expect(Buffer.byteLength(result.output)).to.be.at.most(256 * 1024)
          expect(result.diagnostic).to.match(/exceeded maxOutputBytes \(262144 bytes\): \d+ bytes were dropped as they streamed/)
        }
        // Every 64 KiB chunk (1600 of them, then "END") was forwarded as progress.
        expect(counts).to.deep.equal(Array(8).fill(1600 + 1))
        // Measured about 105 MB on the 2-core dev box; before the fix one 600 MB agent took 1.7 GB.
        expect(beat.peakRssGrowth(), 'RSS growth (bytes)').to.be.below(350 * 1024 * 1024)
        expect(beat.maxGap(), 'event loop blocked (ms)').to.be.below(MAX_GAP_MS)
      } finally {
        beat.stop()
      }
    })

    it('a flood before the hand-over fails the start (ACP_STREAM_LIMIT) naming maxStreamBytes', async () => {
      const error = await rejection(hostileProvider('flood-init', '4', { maxStreamBytes: 1024 * 1024 }).start(request()))
      expect(error.code).to.equal('ACP_STREAM_LIMIT')
      expect(error.message).to.match(/failed during initialize: The agent sent more than maxStreamBytes \(1048576 bytes\)/)
    })

    it('a single ACP message over the per-message limit ends the run as an error naming the limit', async () => {
      const { run } = await start('giant-line', '20')
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include(`larger than ${MAX_MESSAGE_BYTES} bytes`)
    })
  })

  describe('environment', () => {
    const saved = { ...process.env }
    beforeEach(() => Object.assign(process.env, LEAKED))
    afterEach(() => {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key]
      Object.assign(process.env, saved)
    })

    for (const inherit of ['core', 'all'] as const) {
      it(`inherit: ${inherit}: none of the reported secrets reach the child, and none appear in its crash diagnostic`, async () => {
        const { run } = await start('env-echo', undefined, { inherit })
        const result = await run.result
        expect(result.stopReason).to.equal('error')
        const echoed = JSON.parse(result.output) as Record<string, string>
        for (const [name, value] of Object.entries(LEAKED)) {
          expect(echoed, name).to.not.have.property(name)
          expect(result.output, name).to.not.include(value)
          expect(result.diagnostic, name).to.not.include(value)
        }
        expect(echoed.SUBAGENT_DEPTH).to.equal('1')
        expect(echoed.PATH).to.equal(process.env.PATH)
        if (inherit === 'core') expect(Object.keys(echoed).every((name) => /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_.*|TERM|COLORTERM|TMPDIR|TMP|TEMP|TZ|XDG_.*|NODE_PATH|NODE_EXTRA_CA_CERTS|NVM_DIR|COREPACK_HOME|npm_config_.*|NPM_CONFIG_.*|SSL_CERT_FILE|SSL_CERT_DIR|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy|ACP_FIXTURE_OWNER|SUBAGENT_DEPTH|PWD)$/.test(name)), Object.keys(echoed).join()).to.equal(true)
      })
    }

    it('a secret passed through on purpose reaches the child but is scrubbed from the diagnostic', async () => {
      const { run } = await start('env-echo', undefined, { env: { GH_TOKEN: true } })
      const result = await run.result
      expect(JSON.parse(result.output).GH_TOKEN).to.equal(LEAKED.GH_TOKEN)
      expect(result.diagnostic).to.include('GH_TOKEN=[redacted]')
      expect(result.diagnostic).to.not.include(LEAKED.GH_TOKEN)
    })
  })

  describe('containment: processes that leave the process group', () => {
    async function escapees(containment: 'auto' | 'process-group') {
      const { run } = await start('escape', undefined, { containment })
      const result = await run.result
      const pids = JSON.parse(result.output) as { setsid: number; doubleFork: number }
      await run.dispose()
      await reapAll()
      return pids
    }

    it('with a cgroup (containment: auto, where cgroup v2 is writable) setsid and double-forked grandchildren are killed', async function () {
      const pids = await escapees('auto')
      if (cgroupBase()) {
        expect(isAlive(pids.setsid), 'setsid grandchild').to.equal(false)
        expect(isAlive(pids.doubleFork), 'double-forked grandchild').to.equal(false)
      } else {
        // No writable cgroup v2 here: auto is the process-group path, and they escape (see README).
        expect(isAlive(pids.setsid) || isAlive(pids.doubleFork)).to.equal(true)
        for (const pid of [pids.setsid, pids.doubleFork]) try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
        await until(() => !isAlive(pids.setsid) && !isAlive(pids.doubleFork), 'the escaped grandchildren to die')
      }
    })

    it('with the process group only, a setsid grandchild (still a descendant) is killed; a double-forked one escapes (as the README says)', async () => {
      const pids = await escapees('process-group')
      try {
        // Found by its parentage when teardown began (Linux /proc), although it left the group.
        expect(isAlive(pids.setsid), 'setsid grandchild').to.equal(process.platform !== 'linux')
        expect(isAlive(pids.doubleFork), 'double-forked grandchild').to.equal(true)
      } finally {
        for (const pid of [pids.setsid, pids.doubleFork]) try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
        await until(() => !isAlive(pids.setsid) && !isAlive(pids.doubleFork), 'the escaped grandchildren to die')
      }
    })
  })

  describe('usage', () => {
    it('usage_update (context occupancy) is reported as a cumulative lower bound; hostile numbers are ignored', async () => {
      const { run, updates } = await start('usage-update')
      const result = await run.result
      expect(result.stopReason).to.equal('completed')
      expect(updates.filter((update) => update.kind === 'usage').map((update) => update.usage)).to.deep.equal([
        { inputTokens: 1200, outputTokens: 0 },
        { inputTokens: 3400, outputTokens: 0 },
      ])
      expect(result.usage).to.deep.equal({ inputTokens: 3400, outputTokens: 0 })
    })

    it('token usage in PromptResponse.usage wins over the context floor (cachedReadTokens → cachedInputTokens)', async () => {
      const { run, updates } = await start('usage-update', 'with-response')
      const result = await run.result
      expect(result.usage).to.deep.equal({ inputTokens: 4000, outputTokens: 1000, cachedInputTokens: 3000 })
      expect(updates.filter((update) => update.kind === 'usage').at(-1)!.usage).to.deep.equal(result.usage)
    })

    it('a host of ours reports its tree\'s spend in usage_update _meta.cordisSubagents: usage and work go up with each report', async () => {
      const { run, updates } = await start('spend-report')
      const result = await run.result
      expect(result.stopReason).to.equal('completed')
      const reports = updates.filter((update) => update.kind === 'usage')
      expect(reports.map((update) => update.work)).to.deep.equal([
        { steps: 1, toolCalls: 0, delegations: 0 },
        { steps: 2, toolCalls: 3, delegations: 1 },
        { steps: 2, toolCalls: 3, delegations: 1 },
      ])
      expect(result.work).to.deep.equal({ steps: 2, toolCalls: 3, delegations: 1 })
      expect(result.usage).to.deep.equal({ inputTokens: 250, outputTokens: 40 })
    })

    it('an invalid PromptResponse.usage is ignored, the floor stands', async () => {
      const { run } = await start('usage-update', 'bad-response')
      expect((await run.result).usage).to.deep.equal({ inputTokens: 3400, outputTokens: 0 })
    })
  })

  describe('errors', () => {
    it('authentication required at session/prompt → error result with ACP_AUTH_REQUIRED guidance and the auth methods', async () => {
      const { run } = await start('auth-prompt')
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.match(/^\[ACP_AUTH_REQUIRED\] The ACP agent ".*" requires authentication \(it answered session\/prompt with Authentication required \(code -32000\)\); it offers the auth methods "hostile-login" \(Log in with Hostile\)\. Log in once/)
      // The advice names the variable and the value to configure: neither is a secret to scrub.
      expect(result.diagnostic).to.include('by name, e.g. `ANTHROPIC_API_KEY: true` (the env policy')
    })

    it('authentication required at initialize → start rejects ACP_AUTH_REQUIRED, keeping code and data', async () => {
      const error = await rejection(hostileProvider('auth-init').start(request()))
      expect(error.code).to.equal('ACP_AUTH_REQUIRED')
      expect(error.message).to.match(/answered initialize with Authentication required \(code -32000; data: \{"hint":"run hostile login"\}\)/)
    })

    it('a startup error keeps its JSON-RPC code and data, without control characters', async () => {
      const error = await rejection(hostileProvider('startup-error').start(request()))
      expect(error.code).to.equal('ACP_STARTUP_FAILED')
      expect(error.message).to.include('failed during initialize: startup broke (code -32042; data: {"reason":"disk ')
      expect(error.message).to.not.match(/\x1b/)
    })

    it('ANSI escapes and control characters in stderr never reach the diagnostic; configured secrets are scrubbed', async () => {
      const { run } = await start('ansi-stderr', undefined, { env: { HOSTILE_SECRET: 'hs-secret-123456' } })
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('Error: model refused')
      expect(result.diagnostic).to.not.match(/[\x00-\x08\x0b-\x1f\x7f]/)
      expect(result.diagnostic).to.not.include('hs-secret-123456')
    })

    it('separate agent messages are not glued: the output is the last one', async () => {
      const { run } = await start('messages')
      expect((await run.result).output).to.equal('FINAL ANSWER: 42')
    })

    it('Codex-shaped messages without messageId: a tool call, its update or a thought between chunks separates them', async () => {
      const { run } = await start('codex-messages')
      // The last tool call was announced by its update alone; the thought split the two messages after it,
      // and the output is the last message.
      expect((await run.result).output).to.equal('FINAL ANSWER: 42')
    })

    it('the SDK\'s console.error about agent input goes to our scrubbed logger, not to the host\'s stderr', async () => {
      const h = await harness()
      const printed: string[] = []
      const original = console.error
      console.error = (...args: unknown[]) => { printed.push(args.map(String).join(' ')) }
      try {
        const { run } = await start('sdk-console', undefined, { env: { HOSTILE_SECRET: 'hs-secret-654321' } })
        expect((await run.result).output).to.equal('ok')
        await run.dispose()
        const routed = h.logs.filter((log) => log.content.includes('ACP SDK: Got response to unknown request'))
        expect(routed).to.have.length(1)
        expect(routed[0].content).to.not.match(/\x1b/)
        expect(routed[0].content).to.not.include('hs-secret-654321')
        expect(printed.filter((line) => line.includes('unknown request'))).to.deep.equal([])
        console.error('after the run')
        expect(printed).to.include('after the run')
      } finally {
        console.error = original
        await h.stop()
      }
    })
  })

  describe('permissions (Codex-shaped: the only reject option aborts the turn)', () => {
    it('reject picks the abort option only because it is the only "no"; the diagnostic says it ends the turn', async () => {
      const { run } = await start('codex-permission')
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.diagnostic).to.include('"Run `rm -rf build`" (answered "No, and tell Codex what to do differently", the only reject option offered, which ends the turn)')
    })
  })

  describe('tree limits cross the process boundary', () => {
    it('the depth ceiling and what is left of the child\'s budget go in SUBAGENT_MAX_DEPTH, SUBAGENT_BUDGET and _meta', async () => {
      const tree = Budget.root({ maxSteps: 40, maxChildren: 10, maxWallMs: 60_000 })
      tree.charge('steps', 15)
      tree.charge('children', 1)
      const budget = tree.child({ maxTokens: 5000 })
      const { run } = await start('limits', undefined, {}, { depth: 2, maxDepthCeiling: 3, budget })
      const echoed = JSON.parse((await run.result).output)
      expect(echoed.depth).to.equal('2')
      expect(echoed.maxDepth).to.equal('3')
      const passed = JSON.parse(echoed.budget)
      expect(passed).to.include({ maxSteps: 25, maxTokens: 5000, maxChildren: 9 })
      expect(passed.maxWallMs).to.be.within(1, 60_000)
      expect(Object.keys(passed).sort()).to.deep.equal(['maxChildren', 'maxSteps', 'maxTokens', 'maxWallMs'])
      expect(echoed.meta.cordisSubagents).to.deep.include({ depth: 2, maxDepth: 3, budget: passed })
    })

    it('without a budget or a ceiling (a caller outside ctx.subagents) nothing is claimed', async () => {
      const { run } = await start('limits')
      const echoed = JSON.parse((await run.result).output)
      expect(echoed).to.deep.equal({ depth: '1', maxDepth: null, budget: null, meta: { cordisSubagents: { depth: 1 } } })
    })

    it('a child host of ours reads them: its root runs get the ceiling and the budget', async () => {
      const saved = { depth: process.env.SUBAGENT_DEPTH, max: process.env.SUBAGENT_MAX_DEPTH, budget: process.env.SUBAGENT_BUDGET }
      // What the provider sets, read by ctx.agents in the child process (here: in this one).
      process.env.SUBAGENT_DEPTH = '2'
      process.env.SUBAGENT_MAX_DEPTH = '3'
      process.env.SUBAGENT_BUDGET = JSON.stringify({ maxSteps: 25, maxChildren: 9 })
      const h = await harness()
      try {
        const root = h.ctx.agents.create()
        expect(root.depth).to.equal(2)
        expect(h.ctx.agents.rootLimits).to.deep.equal({ maxSteps: 25, maxChildren: 9, maxDepth: 3 })
        expect(root.budget.limits).to.include({ maxSteps: 25, maxChildren: 9, maxDepth: 3 })
      } finally {
        await h.stop()
        for (const [key, value] of [['SUBAGENT_DEPTH', saved.depth], ['SUBAGENT_MAX_DEPTH', saved.max], ['SUBAGENT_BUDGET', saved.budget]] as const) {
          if (value === undefined) delete process.env[key]
          else process.env[key] = value
        }
      }
    })
  })

  describe('tool ceiling', () => {
    it('the parent\'s tool names go to the child in SUBAGENT_ALLOWED_TOOLS and session/new _meta', async () => {
      const parent = { ...fakeParent(), tools: { list: () => [{ name: 'read_file' }, { name: 'subagent_acp' }, { name: 'bad name!' }] } }
      const { run } = await start('allowed-tools', undefined, {}, { parent })
      const echoed = JSON.parse((await run.result).output)
      expect(echoed.env).to.equal('read_file,subagent_acp')
      expect(echoed.meta).to.deep.equal({ cordisSubagents: { depth: 1, allowedTools: ['read_file', 'subagent_acp'] } })
      // Issue 39: the env ceiling names its process by a nonce that only initialize (the direct child) hears again.
      expect(echoed.for).to.match(/^[A-Za-z0-9_-]{24}$/)
      expect(echoed.initMeta).to.deep.equal({ cordisSubagents: { crossingFor: echoed.for } })
    })

    it('a caller without a tool view claims no ceiling (no variable), but the depth still goes in _meta', async () => {
      const { run } = await start('allowed-tools')
      const echoed = JSON.parse((await run.result).output)
      expect(echoed.env).to.equal(null)
      expect(echoed.for).to.equal(null)
      expect(echoed.initMeta).to.equal(null)
      expect(echoed.meta).to.deep.equal({ cordisSubagents: { depth: 1 } })
    })
  })
})
