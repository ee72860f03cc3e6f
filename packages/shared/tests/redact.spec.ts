/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import { capForRedaction, MAX_REDACT_CHARS, redact, REDACTED, Redactor, stripControl } from '@cordis-subagents/shared'

/**
 * CPU milliseconds `work` takes on this thread (user + system). Unlike a wall-clock gap it does not
 * grow when other processes load the machine, so a bound on it tells linear from quadratic work
 * even under `stress-ng`.
 */
function cpuMs(work: () => void): number {
  const before = process.cpuUsage()
  work()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

describe('shared: redact (the one redactor of diagnostics, logs and progress)', () => {
  describe('as model-openai uses it', () => {
    it('masks configured secrets, also URL-encoded, wherever they appear', () => {
      expect(redact('key=abc and the key abc-def/ghi! in text', ['abc-def/ghi!'])).to.not.include('abc-def/ghi!')
      expect(redact('echo abc-def%2Fghi!', ['abc-def/ghi!'])).to.not.include('abc-def%2Fghi')
      expect(redact('x plain-secret-1 y', ['plain-secret-1'])).to.equal('x [redacted] y')
    })

    it('shows the names of variables and placeholder values (true, set, …); masks values only', () => {
      expect(redact('pass it by name, e.g. `ANTHROPIC_API_KEY: true`')).to.equal('pass it by name, e.g. `ANTHROPIC_API_KEY: true`')
      expect(redact('GH_TOKEN=set, GITHUB_PAT_TOKEN=unset, SK_LIVE_KEY: false')).to.equal('GH_TOKEN=set, GITHUB_PAT_TOKEN=unset, SK_LIVE_KEY: false')
      expect(redact('GITHUB_PAT_TOKEN=truely-a-secret-value')).to.equal('GITHUB_PAT_TOKEN=[redacted]')
      expect(redact('DB_PASS=true.hunter2, API_KEY=set`x1')).to.equal('DB_PASS=[redacted], API_KEY=[redacted]')
      // A configured secret that is a placeholder word would mask every such word: it is not one.
      expect(redact('enabled: true, ok', ['true', 'TRUE'])).to.equal('enabled: true, ok')
      // Real keys keep being masked, also upper-case ones that are not name-shaped.
      expect(redact('github_pat_11ABCDEFG0123456789abcdef')).to.equal(REDACTED)
      expect(redact('SK-ABCDEFGHIJ')).to.equal(`SK-${REDACTED}`)
    })

    it('masks URL user info, query values and secret-named parameters', () => {
      expect(redact('GET https://u:p4ss@host/v1/x?key=K1&model=m#f')).to.equal('GET https://[redacted]@host/v1/x?key=[redacted]&model=[redacted]#f')
      expect(redact('{"api_key":"verysecret","model":"gpt"}')).to.equal('{"api_key":"[redacted]","model":"gpt"}')
      expect(redact('token: abc123 other: fine')).to.equal('token: [redacted] other: fine')
      expect(redact('Authorization: Bearer abc.def+ghi/=')).to.equal('Authorization: Bearer [redacted]')
      expect(redact('Basic dXNlcjpwYXNz')).to.equal('Basic [redacted]')
    })

    it('masks key-shaped tokens but keeps model names, paths and ordinary words', () => {
      expect(redact('sk-proj-abcdef123')).to.equal('sk-[redacted]')
      expect(redact('gsk_abcdefghij12')).to.equal('[redacted]')
      expect(redact('tried xk-9f8e****1706 now')).to.equal('tried [redacted] now')
      expect(redact('id a1b2c3d4e5f6a7b8c9d0e1f2a3b4')).to.equal('id [redacted]')
      const plain = 'model "Meta-Llama-3.1-70B-Instruct-Turbo" not found at http://127.0.0.1:11434/v1beta/openai/chat/completions (HTTP 404)'
      expect(redact(plain)).to.equal(plain)
    })

    it('masks a key starting with a long configured key\'s first 8 characters (partial echo)', () => {
      expect(redact('got key-live-AAAA…', ['key-live-ZZZZZZZZZZZZ'])).to.not.include('key-live-AAAA')
    })
  })

  describe('as provider-acp uses it', () => {
    it('removes known secret values and credential shapes, and strips control characters', () => {
      const redactor = new Redactor(['tok-1234567', 'configured-secret'])
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
      const clean = redactor.redact(text)
      for (const secret of ['tok-1234567', 'configured-secret', 'sk-abcdefghijklmnop', 'hunter2', 'eyJhbGciOi', 'pa55w0rd', 'r3dis', 'ghp_abc', 'AKIAABCD']) {
        expect(clean, secret).to.not.include(secret)
      }
      expect(clean).to.include('path /usr/bin stays')
      expect(clean).to.include('OPENAI_API_KEY=[redacted]')
      expect(clean).to.include('red bellcarriagenul')
      expect(clean).to.not.match(/[\x00-\x08\x0b-\x1f\x7f]/)
    })

    it('a secret split by escape sequences is still found', () => {
      expect(new Redactor(['secret-value-1']).redact('secret-\x1b[1mvalue-1')).to.equal('[redacted]')
    })

    it('stripControl keeps newlines and tabs', () => {
      expect(stripControl('a\tb\nc\x1b[2Kd\x07')).to.equal('a\tb\ncd')
    })

    it('cuts text over maxChars with a note, never leaving the head of a secret behind', () => {
      const redactor = new Redactor([], { maxChars: 20 })
      expect(redactor.redact('0123456789 abcdefghijklmnop')).to.equal('0123456789 …[cut at 20 characters]')
      expect(new Redactor().redact('x'.repeat(MAX_REDACT_CHARS + 1))).to.match(/…\[cut at 65536 characters\]$/)
      expect(capForRedaction('short', 10)).to.equal('short')
    })
  })

  describe('the union of both rule sets', () => {
    it('finds the well-known formats inside a longer word and after any word boundary', () => {
      expect(redact('id my-sk-abcdefghijk')).to.equal('id [redacted]')
      expect(redact('ghr_abcdefghijklmnopqrst')).to.equal('[redacted]')
      expect(redact('xoxs-1234567890-abc')).to.equal('[redacted]')
      expect(redact('jwt eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl end')).to.equal('jwt [redacted] end')
    })

    it('masks user info without a password, and a password holding ? or #', () => {
      expect(redact('https://user@host/x')).to.equal('https://[redacted]@host/x')
      expect(redact('redis://:pa?s#s@cache')).to.equal('redis://[redacted]@cache')
    })

    it('masks credential-named values with spaces around the separator, and to the end of the value', () => {
      expect(redact('DB_PASSWORD = hunter2&more')).to.equal('DB_PASSWORD = [redacted]')
      expect(redact("SENTRY_DSN: 'https://k@sentry.io/1'")).to.equal("SENTRY_DSN: '[redacted]'")
      expect(redact('password=basic')).to.equal('password=[redacted]')
    })

    it('keeps ordinary prose readable', () => {
      const prose = 'The agent exited with code 3 during session/new: see https://example.com/a?b (model: gpt-4.1-mini).'
      expect(redact(prose)).to.equal(prose)
      // A `Token` scheme word followed by a credential-length word is taken for a credential.
      expect(redact('the token expired')).to.equal(`the token ${REDACTED}`)
      expect(redact('stopped after 3 attempts (timeout: 500 ms)')).to.equal('stopped after 3 attempts (timeout: 500 ms)')
    })
  })

  describe('properties', () => {
    it('never lets a configured secret through, whatever surrounds it', () => {
      fc.assert(fc.property(fc.string({ minLength: 4, maxLength: 30 }), fc.string(), fc.string(), (secret, before, after) => {
        const out = redact(`${before}${secret}${after}`, [secret])
        // The secret may only survive if the replacement text itself spells it.
        return !out.includes(secret) || REDACTED.includes(secret) || `${before}${after}`.includes(secret)
      }), { numRuns: 500 })
    })

    it('never lets a secret through around any mix of credential syntax, URLs, escapes and control characters', () => {
      const piece = fc.constantFrom('key=', 'TOKEN: ', '"password":"', 'Bearer ', 'https://', 'u:p@', '?a=', '&', '#', '\x1b[', '\x1b]', '\x07', '\r', '\n', ' ', '"', "'", '**', 'sk-', 'eyJ', '.', ':', '=', 'a', '1')
      const noise = fc.array(piece, { maxLength: 12 }).map((parts) => parts.join(''))
      const secret = fc.stringMatching(/^[A-Za-z0-9_\-.~+/]{4,24}$/)
      fc.assert(fc.property(secret, noise, noise, (value, before, after) => {
        const out = new Redactor([value]).redact(`${before}${value}${after}`)
        return !out.includes(value) || REDACTED.includes(value) || stripControl(`${before}${after}`).includes(value)
          || `${before}${after}`.includes(value)
      }), { numRuns: 1000 })
    })

    it('is idempotent on its own output', () => {
      fc.assert(fc.property(fc.string({ maxLength: 200 }), (text) => {
        const once = redact(text)
        return redact(once) === once
      }), { numRuns: 500 })
    })
  })

  describe('time: linear on 256 KiB hostile inputs (the event loop keeps ticking)', () => {
    const size = 256 * 1024
    const units = [
      'a.a.', 'aaaa:aaaa@', '://', '://a:b', '?a=&', 'key=key=', 'bearer ', 'a', 'a1', '**', '"key":"',
      'a=', 'KEY=', 'a://', 'a://:', 'KEY="', 'a_', 'a:', '\x1b[', '\x1b]', 'TOKEN: x a.b.c://u:p@h ',
      'my-sk-', 'eyJaaaaa.', 'x-api-key: ', 'Token ', 'aaaaaaaaaaaaaaa', '-sk-', '\x1b',
      // A scheme word with no gap after it used to rescan to the next space: quadratic without spaces.
      'bearer=', 'bearer.', 'basic(', 'token:',
    ]
    const secrets = ['aaaaaaaaaaaaaaab', 'a.a.a.a.a.b', 'aaaa:aaaa@b', 'some-secret-value']

    it('each of the patterns, 256 KiB long, redacted whole (no cap) well within the bound', async function () {
      this.timeout(60_000)
      const redactor = new Redactor(secrets, { maxChars: size })
      const times: string[] = []
      let worst = 0
      for (const unit of units) {
        const text = unit.repeat(Math.ceil(size / unit.length)).slice(0, size)
        const ms = cpuMs(() => redactor.redact(text))
        worst = Math.max(worst, ms)
        times.push(`${JSON.stringify(unit)} ${ms.toFixed(1)} ms`)
      }
      // A quadratic scan of 256 KiB takes minutes of CPU; a linear one milliseconds. Generous bound.
      expect(worst, `CPU ms of the slowest input; per input: ${times.join(', ')}`).to.be.below(1_000)
      if (process.env.REDACT_TIMES) console.log(times.join('\n'))
    })

    it('a default Redactor caps a 256 KiB input at MAX_REDACT_CHARS first', () => {
      let out = ''
      const ms = cpuMs(() => { out = new Redactor(secrets).redact('key='.repeat(size / 4)) })
      expect(out.length).to.be.at.most(MAX_REDACT_CHARS + 40)
      expect(ms, 'CPU ms').to.be.below(1_000)
    })
  })
})
