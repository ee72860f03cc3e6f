/// <reference types="mocha" />
import { expect } from 'chai'
import { childEnv, Scrubber, secretValues, stripControl, type EnvPolicy } from '../src/index.js'
import { capDiagnostic } from '@cordis-subagents/subagents-service'
import { tailBytes } from '../src/text.js'
import { OutputBuffer } from '../src/output.js'
import { chooseReject } from '../src/permission.js'
import { readAcpUsage, readContextUsed, UsageTracker } from '../src/usage.js'
import { LEAKED } from './helpers.js'

const policy = (inherit: EnvPolicy['inherit'], set: EnvPolicy['set'] = {}, exclude: string[] = []): EnvPolicy => ({ inherit, exclude, set })

describe('provider-acp: env policy, scrubbing, output budget, usage, permissions', () => {
  describe('env policy', () => {
    const host = {
      PATH: '/bin', HOME: '/home/u', LANG: 'C.UTF-8', LC_ALL: 'C', TERM: 'xterm', npm_config_cache: '/c',
      EDITOR: 'vi', SUBAGENT_DEPTH: '7', SUBAGENT_ALLOWED_TOOLS: 'everything', ...LEAKED,
    }

    it('inherit: core passes only the core allow-list; no listed secret arrives', () => {
      const env = childEnv(host, policy('core'), { SUBAGENT_DEPTH: '2' })
      expect(env).to.deep.equal({
        PATH: '/bin', HOME: '/home/u', LANG: 'C.UTF-8', LC_ALL: 'C', TERM: 'xterm', npm_config_cache: '/c', SUBAGENT_DEPTH: '2',
      })
    })

    it('inherit: all passes the rest, minus every excluded name and every URL with credentials', () => {
      const env = childEnv(host, policy('all'), { SUBAGENT_DEPTH: '2' })
      for (const name of Object.keys(LEAKED)) expect(env, name).to.not.have.property(name)
      expect(env).to.include({ EDITOR: 'vi', PATH: '/bin', SUBAGENT_DEPTH: '2' })
      // Our own variables are never inherited: only what the provider sets arrives.
      expect(env).to.not.have.property('SUBAGENT_ALLOWED_TOOLS')
    })

    it('inherit: none passes nothing but env and our SUBAGENT_* variables; envExclude adds patterns', () => {
      expect(childEnv(host, policy('none', { EDITOR: true }), { SUBAGENT_DEPTH: '1' })).to.deep.equal({ EDITOR: 'vi', SUBAGENT_DEPTH: '1' })
      expect(childEnv(host, policy('all', {}, ['edit*']), {})).to.not.have.property('EDITOR')
    })

    it('env sets, passes through (even excluded names) and removes; SUBAGENT_* set by the provider win over everything', () => {
      const env = childEnv(host, policy('core', { GH_TOKEN: true, HOME: false, EXTRA: 'e', MISSING: true, SUBAGENT_DEPTH: '9' }), { SUBAGENT_DEPTH: '2' })
      expect(env).to.deep.equal({ PATH: '/bin', LANG: 'C.UTF-8', LC_ALL: 'C', TERM: 'xterm', npm_config_cache: '/c', GH_TOKEN: 'gh-token-0018', EXTRA: 'e', SUBAGENT_DEPTH: '2' })
    })

    it('the values of every excluded variable are secrets for the scrubber, PATH is not', () => {
      const values = secretValues(host, policy('core', { MY_TOKEN: 'configured-token-value', PLAIN: 'plain-value' }))
      for (const value of Object.values(LEAKED)) expect(values, value).to.include(value)
      expect(values).to.include('configured-token-value')
      expect(values).to.not.include('plain-value')
      expect(values).to.not.include('/bin')
    })
  })

  describe('scrubbing', () => {
    it('removes known secret values and credential shapes, and strips control characters', () => {
      const scrubber = new Scrubber(['tok-1234567', 'configured-secret'])
      const text = [
        'using tok-1234567 and configured-secret',
        'OPENAI_API_KEY=sk-abcdefghijklmnop',
        'password: "hunter2 with spaces"',
        'DB_PASS=hunter2b MYSQL_PWD=hunter2c',
        'Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.sig',
        'fetch https://user:pa55w0rd@example.com/x and redis://:r3dis@cache',
        'ghp_abcdefghijklmnopqrstuvwxyz012345 AKIAABCDEFGHIJKLMNOP',
        '\x1b[31mred\x1b[0m \x1b]0;title\x07bell\rcarriage\x00nul',
        'path /usr/bin stays',
      ].join('\n')
      const clean = scrubber.scrub(text)
      for (const secret of ['tok-1234567', 'configured-secret', 'sk-abcdefghijklmnop', 'hunter2', 'eyJhbGciOi', 'pa55w0rd', 'r3dis', 'ghp_abc', 'AKIAABCD']) {
        expect(clean, secret).to.not.include(secret)
      }
      expect(clean).to.include('path /usr/bin stays')
      expect(clean).to.include('OPENAI_API_KEY=[redacted]')
      expect(clean).to.include('red bellcarriagenul')
      expect(clean).to.not.match(/[\x00-\x08\x0b-\x1f\x7f]/)
    })

    it('a secret split by escape sequences is still found', () => {
      expect(new Scrubber(['secret-value-1']).scrub('secret-\x1b[1mvalue-1')).to.equal('[redacted]')
    })

    it('is linear: 256 KiB of each pathological input is scrubbed in well under a second', () => {
      const scrubber = new Scrubber(['some-secret-value'])
      const inputs = ['a.', 'a=', 'KEY=', 'a://', 'a://:', 'KEY="', 'a_', 'a:', '\x1b[', '\x1b]', 'TOKEN: x a.b.c://u:p@h ']
      for (const unit of inputs) {
        const text = unit.repeat(Math.ceil(256 * 1024 / unit.length))
        const started = performance.now()
        // Scrub the whole text (the scrubber caps each call at 64 Ki characters).
        for (let i = 0; i < text.length; i += 60_000) scrubber.scrub(text.slice(i, i + 60_000))
        expect(performance.now() - started, JSON.stringify(unit)).to.be.below(1000)
      }
    })

    it('stripControl keeps newlines and tabs', () => {
      expect(stripControl('a\tb\nc\x1b[2Kd\x07')).to.equal('a\tb\ncd')
    })

    it('tailBytes keeps the last bytes, starts at a line boundary and never splits a character', () => {
      const text = 'first line\n' + 'ä'.repeat(100) + '\nlast line 😀'
      const tail = tailBytes(text, 50)
      expect(Buffer.byteLength(tail)).to.be.at.most(50)
      expect(tail).to.equal('last line 😀')
      expect(tailBytes('short', 50)).to.equal('short')
      expect(tailBytes('😀'.repeat(20), 10)).to.equal('😀😀')
    })

    it('diagnostics (capped with the service\'s capDiagnostic) keep the head within the byte limit and mark the cut', () => {
      const capped = capDiagnostic('é'.repeat(5000), 4096)
      expect(Buffer.byteLength(capped)).to.be.at.most(4096)
      expect(capped.endsWith('…[truncated]')).to.equal(true)
    })
  })

  describe('output budget', () => {
    it('keeps the head of both texts within maxBytes and counts what it dropped', () => {
      const output = new OutputBuffer(10)
      output.push('0123456789abc')
      expect(output.text()).to.equal('0123456789')
      expect(output.dropped()).to.equal(3)
      output.toolCall()
      output.push('after')
      expect(output.text()).to.equal('after')
      expect(output.dropped()).to.equal(0)
      const wide = new OutputBuffer(5)
      wide.push('ää😀')
      expect(wide.text()).to.equal('ää')
    })

    it('joins separate messages with a newline (a tool call between them, or a new messageId)', () => {
      const output = new OutputBuffer(1000)
      output.push('may cause issues.', 'm1')
      output.push('FINAL', 'm2')
      output.push(' ANSWER', 'm2')
      expect(output.text()).to.equal('may cause issues.\nFINAL ANSWER')
      const split = new OutputBuffer(1000)
      split.push('Summary before.')
      split.toolCall()
      expect(split.text()).to.equal('Summary before.')
      split.push('   ')
      expect(split.text()).to.equal('Summary before.\n   ')
    })
  })

  describe('usage', () => {
    it('maps ACP Usage (cachedReadTokens → cachedInputTokens) and rejects what is not a non-negative safe integer', () => {
      expect(readAcpUsage({ totalTokens: 15, inputTokens: 10, outputTokens: 5, cachedReadTokens: 2, thoughtTokens: 1 }))
        .to.deep.equal({ inputTokens: 10, outputTokens: 5, cachedInputTokens: 2 })
      for (const bad of [-1e18, 1.7e308, Infinity, NaN, -1, 1.5, '10', null]) {
        expect(readAcpUsage({ inputTokens: bad, outputTokens: 1 }), String(bad)).to.be.a('string')
        expect(readAcpUsage({ inputTokens: 1, outputTokens: 1, cachedReadTokens: bad === null ? -1 : bad }), String(bad)).to.be.a('string')
      }
      expect(readAcpUsage({ inputTokens: 5, outputTokens: 1, cachedReadTokens: 9 })).to.deep.equal({ inputTokens: 5, outputTokens: 1, cachedInputTokens: 5 })
      expect(readContextUsed({ used: 1200, size: 200000 })).to.equal(1200)
      expect(readContextUsed({ used: -5, size: 1 })).to.be.a('string')
    })

    it('the tracker is cumulative: context occupancy is a floor until token usage arrives; no field ever decreases', () => {
      const tracker = new UsageTracker()
      expect(tracker.current()).to.equal(undefined)
      expect(tracker.context(1000)).to.deep.equal({ inputTokens: 1000, outputTokens: 0 })
      expect(tracker.context(800)).to.equal(undefined)
      // The agent's own figure wins from now on, but the floor already charged is not taken back.
      expect(tracker.tokens({ inputTokens: 900, outputTokens: 300 })).to.deep.equal({ inputTokens: 1000, outputTokens: 300 })
      expect(tracker.tokens({ inputTokens: 500, outputTokens: 100 })).to.equal(undefined)
      // Once the agent reports tokens, context occupancy no longer counts.
      expect(tracker.context(5000)).to.equal(undefined)
      expect(tracker.tokens({ inputTokens: 2000, outputTokens: 400, cachedInputTokens: 50 })).to.deep.equal({ inputTokens: 2000, outputTokens: 400, cachedInputTokens: 50 })
      expect(tracker.current()).to.deep.equal({ inputTokens: 2000, outputTokens: 400, cachedInputTokens: 50 })
    })
  })

  describe('permission: reject', () => {
    const option = (optionId: string, kind: string, name = optionId) => ({ optionId, kind, name }) as never

    it('prefers reject_once over reject_always over an abort-like reject option', () => {
      expect(chooseReject([option('abort', 'reject_once'), option('never', 'reject_always'), option('yes', 'allow_once')]))
        .to.deep.include({ optionId: 'never' })
      expect(chooseReject([option('never', 'reject_always'), option('no', 'reject_once')])).to.deep.include({ optionId: 'no' })
      expect(chooseReject([option('x', 'reject_once', 'No, and stop'), option('abort', 'reject_always')])).to.deep.include({ optionId: 'x' })
      // Codex' adapter: the only reject-kind option aborts the turn; it is still the only "no".
      expect(chooseReject([option('approved', 'allow_once'), option('abort', 'reject_once')])).to.deep.include({ optionId: 'abort' })
      expect(chooseReject([option('yes', 'allow_once')])).to.equal(undefined)
    })
  })
})
