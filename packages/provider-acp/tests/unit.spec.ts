/// <reference types="mocha" />
import { expect } from 'chai'
import { childEnv, CREDENTIAL_NAME, Scrubber } from '../src/index.js'
import { capDiagnostic } from '@cordis-subagents/subagents-service'
import { secretValues, tailBytes } from '../src/scrub.js'

describe('provider-acp: env, scrubbing and byte limits', () => {
  it('CREDENTIAL_NAME matches *KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *CREDENTIAL* in any case', () => {
    for (const name of ['OPENAI_API_KEY', 'github_token', 'AWS_SECRET_ACCESS_KEY', 'DB_PASSWORD', 'GOOGLE_APPLICATION_CREDENTIALS', 'apikey']) {
      expect(CREDENTIAL_NAME.test(name), name).to.equal(true)
    }
    for (const name of ['PATH', 'HOME', 'LANG', 'NODE_OPTIONS', 'SUBAGENT_DEPTH']) {
      expect(CREDENTIAL_NAME.test(name), name).to.equal(false)
    }
  })

  it('childEnv drops credentials, applies the configured entries and sets SUBAGENT_DEPTH last', () => {
    const host = { PATH: '/bin', OPENAI_API_KEY: 'k', GH_TOKEN: 't', DROP: 'x', SUBAGENT_DEPTH: '0' }
    const env = childEnv(host, { GH_TOKEN: true, DROP: false, EXTRA: 'e', MISSING: true, SUBAGENT_DEPTH: '9' }, 2)
    expect(env).to.deep.equal({ PATH: '/bin', GH_TOKEN: 't', EXTRA: 'e', SUBAGENT_DEPTH: '2' })
  })

  it('Scrubber removes known secret values and credential shapes', () => {
    const scrubber = new Scrubber(secretValues({ MY_TOKEN: 'tok-1234567', PATH: '/usr/bin' }, { X_SECRET: 'configured-secret', HOME: true }))
    const text = [
      'using tok-1234567 and configured-secret',
      'OPENAI_API_KEY=sk-abcdefghijklmnop',
      'password: "hunter2 with spaces"',
      'Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.sig',
      'fetch https://user:pa55w0rd@example.com/x',
      'ghp_abcdefghijklmnopqrstuvwxyz012345 AKIAABCDEFGHIJKLMNOP',
      'path /usr/bin stays',
    ].join('\n')
    const clean = scrubber.scrub(text)
    for (const secret of ['tok-1234567', 'configured-secret', 'sk-abcdefghijklmnop', 'hunter2', 'eyJhbGciOi', 'pa55w0rd', 'ghp_abc', 'AKIAABCD']) {
      expect(clean, secret).to.not.include(secret)
    }
    expect(clean).to.include('path /usr/bin stays')
    expect(clean).to.include('OPENAI_API_KEY=[redacted]')
  })

  it('tailBytes keeps the last bytes, starts at a line boundary and never splits a character', () => {
    const text = 'first line\n' + 'ä'.repeat(100) + '\nlast line 😀'
    const tail = tailBytes(text, 50)
    expect(Buffer.byteLength(tail)).to.be.at.most(50)
    expect(tail).to.equal('last line 😀')
    expect(tailBytes('short', 50)).to.equal('short')
    const oneLine = tailBytes('😀'.repeat(20), 10)
    expect(oneLine).to.equal('😀😀')
  })

  it('diagnostics (capped with the service\'s capDiagnostic) keep the head within the byte limit and mark the cut', () => {
    const capped = capDiagnostic('é'.repeat(5000), 4096)
    expect(Buffer.byteLength(capped)).to.be.at.most(4096)
    expect(capped.endsWith('…[truncated]')).to.equal(true)
  })
})
