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

  it('the output is the last message: a new messageId, or a tool call between, starts one', () => {
    const output = new OutputBuffer(1000)
    output.push('may cause issues.', 'm1')
    output.push('FINAL', 'm2')
    output.push(' ANSWER', 'm2')
    expect(output.text()).to.equal('FINAL ANSWER')
    const split = new OutputBuffer(1000)
    split.push('Summary before.')
    split.toolCall()
    expect(split.text()).to.equal('Summary before.')
    split.push('   ')
    expect(split.text(), 'a blank last message falls back to the last one with text').to.equal('Summary before.')
    split.push('Summary after.')
    expect(split.text()).to.equal('   Summary after.')
  })

  it('without messageId, anything streamed between text chunks (a thought, a plan, usage, a tool update) ends a message', () => {
    const output = new OutputBuffer(1000)
    output.interrupted() // before any text: nothing to separate
    output.push('This may cause issues.')
    output.interrupted()
    output.interrupted()
    output.push('FINAL ANSWER')
    output.push(': 42')
    expect(output.text()).to.equal('FINAL ANSWER: 42')
  })

  it('with message ids, the id alone decides: an update inside one message does not split it', () => {
    const output = new OutputBuffer(1000)
    output.push('Part one, ', 'm1')
    output.interrupted()
    output.push('part two.', 'm1')
    expect(output.text()).to.equal('Part one, part two.')
  })

  it('a new turn starts afresh; until it says something, the earlier turn\'s output stands', () => {
    const output = new OutputBuffer(1000)
    output.push('first answer')
    output.newTurn()
    expect(output.text()).to.equal('first answer')
    output.push('second answer')
    expect(output.text()).to.equal('second answer')
  })
})
