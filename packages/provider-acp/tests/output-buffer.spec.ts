/// <reference types="mocha" />
import { expect } from 'chai'
import { OutputBuffer } from '../src/output.js'

describe('provider-acp: the output budget (OutputBuffer)', () => {
  it('keeps the head of both texts within maxBytes and counts what it dropped', () => {
    const output = new OutputBuffer(10)
    output.push('0123456789abc')
    expect(output.text()).to.equal('0123456789')
    expect(output.dropped()).to.equal(3)
    output.toolCall()
    output.push('after')
    expect(output.text()).to.equal('after')
    expect(output.dropped()).to.equal(0)
    const wide = new OutputBuffer(5)
    wide.push('ää😀')
    expect(wide.text()).to.equal('ää')
  })

  it('joins separate messages with a newline (a tool call between them, or a new messageId)', () => {
    const output = new OutputBuffer(1000)
    output.push('may cause issues.', 'm1')
    output.push('FINAL', 'm2')
    output.push(' ANSWER', 'm2')
    expect(output.text()).to.equal('may cause issues.\nFINAL ANSWER')
    const split = new OutputBuffer(1000)
    split.push('Summary before.')
    split.toolCall()
    expect(split.text()).to.equal('Summary before.')
    split.push('   ')
    expect(split.text()).to.equal('Summary before.\n   ')
  })

  it('without messageId, text on both sides of an interruption (a thought, a plan, a tool update) is two messages', () => {
    const output = new OutputBuffer(1000)
    output.interrupted() // before any text: nothing to separate
    output.push('This may cause issues.')
    output.interrupted()
    output.interrupted()
    output.push('FINAL ANSWER')
    output.push(': 42')
    expect(output.text()).to.equal('This may cause issues.\nFINAL ANSWER: 42')
  })
})
