/// <reference types="mocha" />
import { expect } from 'chai'
import { capDiagnostic } from '@cordis-subagents/subagents-service'
import { tailBytes } from '../src/text.js'

describe('provider-acp: caps on agent text (stderr tail, diagnostics)', () => {
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
