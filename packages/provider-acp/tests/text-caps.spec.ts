/// <reference types="mocha" />
import { expect } from 'chai'
import type { Logger } from 'cordis'
import { capDiagnostic } from '@cordis-subagents/subagents-service'
import { tailBytes } from '../src/text.js'
import { SpareBackoff } from '../src/pool/spare-backoff.js'

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

  it('a failed spare\'s reason in the pool status is cut to 2000 characters between characters, marked', () => {
    const logger = { info() {}, warn() {}, debug() {} } as unknown as Logger
    const backoff = new SpareBackoff(3, logger, 'acp')
    backoff.failed('a'.repeat(1998) + '😀 and the stderr tail')
    const shown = backoff.status(true).lastFailure!
    expect(/[\ud800-\udbff](?![\udc00-\udfff])/.test(shown), JSON.stringify(shown.slice(-4))).to.equal(false)
    expect(shown).to.equal('a'.repeat(1998) + '…')
    backoff.failed('b'.repeat(1997) + '😀 and the stderr tail')
    expect(backoff.status(true).lastFailure).to.equal('b'.repeat(1997) + '😀…')
  })
})
