/// <reference types="mocha" />
import { expect } from 'chai'
import { capBytes, describeError, headBytes, headChars, utf8Length } from '@cordis-subagents/shared'

describe('shared: text caps and error descriptions', () => {
  it('describeError never throws and gives one line for anything thrown', () => {
    expect(describeError(new Error('boom'))).to.equal('boom')
    expect(describeError(new TypeError(''))).to.equal('TypeError')
    expect(describeError('plain')).to.equal('plain')
    expect(describeError(42)).to.equal('42')
    const hostile = { toString() { throw new Error('no') } }
    expect(describeError(hostile)).to.equal('an unprintable error')
  })

  it('headBytes cuts on a code point boundary within the byte budget', () => {
    expect(headBytes('héllo', 100)).to.equal('héllo')
    expect(headBytes('héllo', 2)).to.equal('h') // 'é' is 2 bytes: it does not fit after 'h'
    expect(headBytes('a😀b', 4)).to.equal('a') // never half a surrogate pair
    expect(headBytes('a😀b', 5)).to.equal('a😀')
    expect(headBytes('abc', 0)).to.equal('')
  })

  it('capBytes appends the mark only when it cut, and the result fits', () => {
    expect(capBytes('short', 10, '…')).to.equal('short')
    const cut = capBytes('é'.repeat(100), 21, ' …')
    expect(cut.endsWith(' …')).to.equal(true)
    expect(utf8Length(cut)).to.be.at.most(21)
    expect(capBytes('abcdef', 2, '[cut]')).to.equal('')
  })

  it('headChars cuts within the code units, never inside a surrogate pair, and marks only a cut', () => {
    expect(headChars('short', 10, '…')).to.equal('short')
    expect(headChars('abcdef', 3, '…')).to.equal('abc…')
    expect(headChars('ab😀c', 3)).to.equal('ab') // the pair's high half would end the head: it goes too
    expect(headChars('ab😀c', 4)).to.equal('ab😀')
    expect(headChars('😀', 1, '[cut]')).to.equal('[cut]')
    expect(headChars('abc', 0)).to.equal('')
  })
})
