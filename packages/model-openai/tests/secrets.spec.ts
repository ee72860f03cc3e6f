/// <reference types="mocha" />
// Which configured values a diagnostic never shows: the API key, the values of credential-named
// headers (shared's `isCredentialName`, the one rule), a bearer header's token, the baseURL's query values.
import { expect } from 'chai'
import { secretsOf } from '../src/diagnostics.js'

describe('model-openai secrets (what diagnostics scrub)', () => {
  it('takes the key, credential-named header values (with a bearer token apart) and query values', () => {
    const headers = {
      'Authorization': 'Bearer sk-header-token',
      'X-Sentry-DSN': 'https://dsn.example/1',
      'X-Jwt': 'eyJhbGciOi.payload.sig',
      'Content-Type': 'application/json',
      'X-Request-Id': 'req-1234',
    }
    expect(secretsOf('sk-key', headers, 'https://api.example/v1?api-version=2024&sig=abcd')).to.deep.equal([
      'sk-key', 'Bearer sk-header-token', 'sk-header-token', 'https://dsn.example/1', 'eyJhbGciOi.payload.sig', '2024', 'abcd',
    ])
  })

  it('takes a value configured with surrounding whitespace both as given and as fetch sends it (trimmed)', () => {
    expect(secretsOf('sk-key\n', { 'X-Api-Key': ' hdr \r\n', 'Authorization': 'Bearer tok\n' })).to.deep.equal([
      'sk-key\n', 'sk-key', ' hdr \r\n', 'hdr', 'Bearer tok\n', 'Bearer tok', 'tok',
    ])
  })

  it('takes nothing from an empty key, empty values or a baseURL that is not a URL', () => {
    expect(secretsOf('', { Authorization: '' }, 'not a url')).to.deep.equal([])
  })
})
