import { expect } from 'chai'
import fc from 'fast-check'
import { redact } from '@cordis-subagents/model-openai'

describe('redact', () => {
  it('masks configured secrets, also URL-encoded, wherever they appear', () => {
    expect(redact('key=abc and the key abc-def/ghi! in text', ['abc-def/ghi!'])).to.not.include('abc-def/ghi!')
    expect(redact('echo abc-def%2Fghi!', ['abc-def/ghi!'])).to.not.include('abc-def%2Fghi')
    expect(redact('x plain-secret-1 y', ['plain-secret-1'])).to.equal('x [redacted] y')
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

  it('never lets a configured secret through, whatever surrounds it (property)', () => {
    fc.assert(fc.property(fc.string({ minLength: 4, maxLength: 30 }), fc.string(), fc.string(), (secret, before, after) => {
      const out = redact(`${before}${secret}${after}`, [secret])
      // The secret may only survive if the replacement text itself spells it.
      return !out.includes(secret) || '[redacted]'.includes(secret) || `${before}${after}`.includes(secret)
    }), { numRuns: 500 })
  })

  it('runs in linear time on hostile input (256 KiB patterns finish promptly)', function () {
    this.timeout(20_000)
    const size = 256 * 1024
    const inputs = [
      'a.a.'.repeat(size / 4),
      'aaaa:aaaa@'.repeat(size / 10),
      '://'.repeat(size / 3),
      '://a:b'.repeat(size / 6),
      '?a=&'.repeat(size / 4),
      'key=key='.repeat(size / 8),
      'bearer '.repeat(size / 7),
      'a'.repeat(size),
      'a1'.repeat(size / 2),
      '**'.repeat(size / 2),
      '"key":"'.repeat(size / 7),
    ]
    const secrets = ['aaaaaaaaaaaaaaab', 'a.a.a.a.a.b', 'aaaa:aaaa@b']
    for (const input of inputs) {
      const started = Date.now()
      redact(input, secrets)
      // A quadratic scan of 256 KiB takes minutes; linear takes milliseconds. Generous bound.
      expect(Date.now() - started, input.slice(0, 12)).to.be.below(3_000)
    }
  })
})
