/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import { describeError } from '@cordis-subagents/shared'
import { MAX_DIAGNOSTIC_BYTES, TRUNCATION_MARK, capDiagnostic } from '@cordis-subagents/subagents-service'

const bytes = (text: string) => Buffer.byteLength(text, 'utf8')

describe('capDiagnostic', () => {
  it('leaves text within the limit alone', () => {
    expect(capDiagnostic('short')).to.equal('short')
    const exact = 'a'.repeat(MAX_DIAGNOSTIC_BYTES)
    expect(capDiagnostic(exact)).to.equal(exact)
  })

  it('cuts one byte over the limit and marks it', () => {
    const over = 'a'.repeat(MAX_DIAGNOSTIC_BYTES + 1)
    const capped = capDiagnostic(over)
    expect(bytes(capped)).to.equal(MAX_DIAGNOSTIC_BYTES)
    expect(capped.endsWith(TRUNCATION_MARK)).to.equal(true)
  })

  it('never splits a multi-byte character or a surrogate pair', () => {
    for (const unit of ['é', '€', '😀']) {
      for (let limit = 20; limit < 40; limit++) {
        const capped = capDiagnostic(unit.repeat(50), limit)
        expect(bytes(capped)).to.be.at.most(limit)
        const kept = capped.slice(0, -TRUNCATION_MARK.length)
        expect(kept).to.equal(unit.repeat(kept.length / unit.length))
      }
    }
  })

  it('property: at most the limit, a prefix of the input plus the mark, or the input itself', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 400 }), fc.integer({ min: 16, max: 600 }), (text, limit) => {
      const capped = capDiagnostic(text, limit)
      expect(bytes(capped)).to.be.at.most(limit)
      if (bytes(text) <= limit) {
        expect(capped).to.equal(text)
      } else {
        expect(capped.endsWith(TRUNCATION_MARK)).to.equal(true)
        expect(text.startsWith(capped.slice(0, -TRUNCATION_MARK.length))).to.equal(true)
        expect(capped).to.not.include('\uFFFD')
      }
    }))
  })

  it('describeError never throws', () => {
    expect(describeError(new Error('m'))).to.equal('m')
    expect(describeError('text')).to.equal('text')
    expect(describeError(Object.create(null))).to.be.a('string')
    expect(describeError({ toString() { throw new Error('x') } })).to.be.a('string')
  })
})
