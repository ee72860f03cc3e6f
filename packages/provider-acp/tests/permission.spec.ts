/// <reference types="mocha" />
import { expect } from 'chai'
import { chooseReject } from '../src/permission.js'
import { chooseOption } from '../src/questions/escalation.js'
import { MAX_WAITING_QUESTIONS, Parking } from '../src/questions/parking.js'

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

describe('provider-acp: which option an escalated answer names (permission: escalate)', () => {
  const option = (optionId: string, kind: string, name = optionId) => ({ optionId, kind, name }) as never
  const offered = [option('approved', 'allow_once', 'Yes, once'), option('forever', 'allow_always', 'Always'), option('abort', 'reject_once', 'Stop'),
    option('deny', 'reject_once', 'No')]

  it('an option id first, then an option name, both case-insensitive and trimmed', () => {
    expect(chooseOption(' FOREVER ', offered)).to.deep.include({ optionId: 'forever' })
    expect(chooseOption('yes, once', offered)).to.deep.include({ optionId: 'approved' })
    // "No" is the name of `deny`: a name beats the keyword (which would pick the same least destructive reject here).
    expect(chooseOption('no', offered)).to.deep.include({ optionId: 'deny' })
    // An id beats a name: the option with id `deny` wins over a keyword.
    expect(chooseOption('deny', offered)).to.deep.include({ optionId: 'deny' })
  })

  it('allow / yes pick allow_once (else allow_always); reject / no the least destructive reject, else cancelled', () => {
    expect(chooseOption('allow', offered)).to.deep.include({ optionId: 'approved' })
    expect(chooseOption('yes', [option('forever', 'allow_always'), option('n', 'reject_once')])).to.deep.include({ optionId: 'forever' })
    // The abort-like reject option is the last choice, as under permission: reject.
    expect(chooseOption('reject', [option('abort', 'reject_once'), option('never', 'reject_always')])).to.deep.include({ optionId: 'never' })
    expect(chooseOption('reject', [option('ok', 'allow_once')])).to.equal('cancelled')
    expect(chooseOption('allow', [option('nope', 'reject_once')])).to.equal(undefined)
    expect(chooseOption('perhaps', offered)).to.equal(undefined)
  })
})

describe('provider-acp: the questions a run waits on (Parking)', () => {
  const waiting = (id: string, delivered: string[]) => ({
    question: { id, kind: 'ask' as const, text: id, path: [] },
    accept: (answer: string) => {
      if (answer === 'bad') throw new Error('bad answer')
      return () => delivered.push(`${id}:${answer}`)
    },
    drop: () => delivered.push(`${id}:dropped`),
  })

  it('shows the oldest, then the next once answered; at most MAX_WAITING_QUESTIONS wait; drop lets them all go', () => {
    const shown: string[] = []
    const delivered: string[] = []
    const parking = new Parking({ maxParkedMs: 60_000, parked: (question) => shown.push(question.id), expired: () => {} })
    for (let i = 0; i < MAX_WAITING_QUESTIONS; i++) expect(parking.add(waiting(`q${i}`, delivered))).to.equal(true)
    expect(parking.add(waiting('extra', delivered))).to.equal(false)
    expect(shown).to.deep.equal(['q0'])
    expect(() => parking.answer('bad')).to.throw('bad answer')
    expect(parking.question?.id, 'a refused answer changes nothing').to.equal('q0')
    parking.answer('ok')
    expect(delivered).to.deep.equal(['q0:ok'])
    expect(shown).to.deep.equal(['q0', 'q1'])
    parking.dropAll()
    expect(delivered.length).to.equal(MAX_WAITING_QUESTIONS)
    expect(parking.question).to.equal(undefined)
  })
})
