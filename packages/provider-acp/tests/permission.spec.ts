/// <reference types="mocha" />
import { expect } from 'chai'
import { chooseReject } from '../src/permission.js'

describe('provider-acp: answering permission requests (permission: reject)', () => {
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
