/// <reference types="mocha" />
// The host-side check of a server's JSON Schema (issue 39 item 3): every regex on RE2, and the
// bounds that keep a hostile schema from costing the host more than a check is worth.
import { expect } from 'chai'
import { schemaCheck } from '../src/validation.js'

function checker(schema: Record<string, unknown>) {
  const warnings: string[] = []
  return { check: schemaCheck(schema, (reason) => void warnings.push(reason)), warnings }
}

describe('@cordis-subagents/mcp: schema checks on the host', () => {
  it('checks types, required properties and patterns; a pattern RE2 cannot run is skipped alone, with one warning', () => {
    const { check, warnings } = checker({
      type: 'object',
      properties: { id: { type: 'string', pattern: '^[a-z]+-\\d{2,}$' }, secret: { type: 'string', pattern: '(?=.*\\d)' }, n: { type: 'integer' } },
      required: ['id'],
    })
    expect(check({ id: 'ab-12', secret: 'no digit', n: 3 })).to.deep.equal([])
    expect(check({ id: 'AB-1' })).to.deep.equal([{ path: ['id'], message: 'must match pattern "^[a-z]+-\\d{2,}$"' }])
    expect(check({ id: 'ab-12', n: 'three' })).to.deep.equal([{ path: ['n'], message: 'must be integer' }])
    expect(check({})).to.deep.equal([{ path: [], message: 'must have required property \'id\'' }])
    expect(warnings).to.have.length(1)
    expect(warnings[0]).to.match(/^pattern "\(\?=\.\*\\\\d\)": RE2 cannot run it .*not checked on the host \(the server validates it\)$/)
  })

  it('a patternProperties key RE2 cannot run leaves the whole schema to the server', () => {
    const { check, warnings } = checker({ type: 'object', patternProperties: { '^(\\w)\\1$': { type: 'string' } }, additionalProperties: false })
    expect(check({ aa: 1, other: true })).to.deep.equal([])
    expect(warnings[0]).to.match(/^its schema cannot be checked on the host \(RE2 cannot run it/)
  })

  it('past 16 patterns the later ones are not checked; a huge pattern is not compiled', () => {
    const properties = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`p${i}`, { type: 'string', pattern: '^x$' }]))
    const { check, warnings } = checker({ type: 'object', properties: { ...properties, big: { type: 'string', pattern: '[ab]{600}c[ab]{600}' } } })
    expect(check({ p0: 'y' })).to.deep.equal([{ path: ['p0'], message: 'must match pattern "^x$"' }])
    expect(check({ p19: 'y', big: 'c' })).to.deep.equal([])
    expect(warnings).to.have.length(1)
    expect(warnings[0]).to.include('the schema has more than 16 patterns')
    const huge = checker({ type: 'object', properties: { big: { type: 'string', pattern: '[ab]{600}c[ab]{600}' } } })
    expect(huge.check({ big: 'c' })).to.deep.equal([])
    expect(huge.warnings[0]).to.match(/compiles to \d+ RE2 instructions \(over 1024\)/)
  })

  it('a string longer than its pattern\'s work bound is not checked against it (the cost stays bounded)', () => {
    const { check } = checker({ type: 'object', properties: { s: { type: 'string', pattern: '^(?:a|b|c|d|e|f|g|h){1,60}$' } } })
    expect(check({ s: 'z' })).to.have.length(1)
    expect(check({ s: 'z'.repeat(1_000_000) })).to.deep.equal([])
  })

  it('a schema over 16 KiB of JSON, or one ajv cannot compile, is left to the server with a warning', () => {
    const big = checker({ type: 'object', description: 'x'.repeat(17 * 1024), properties: { n: { type: 'integer' } } })
    expect(big.check({ n: 'not a number' })).to.deep.equal([])
    expect(big.warnings[0]).to.include('over 16384 characters')
    const remote = checker({ type: 'object', properties: { a: { $ref: 'https://example.invalid/schema.json' } } })
    expect(remote.check({ a: 1 })).to.deep.equal([])
    expect(remote.warnings[0]).to.match(/^its schema cannot be checked on the host \(can't resolve reference/)
  })
})
