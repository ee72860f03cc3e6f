/// <reference types="mocha" />
import { expect } from 'chai'
import { nestingDepth } from '@cordis-subagents/shared'

describe('shared: nestingDepth of a value read from outside', () => {
  it('counts object and array levels (a primitive 0, {} 1), and stops past the limit without recursion', () => {
    expect(nestingDepth('text', 5)).to.equal(0)
    expect(nestingDepth(null, 5)).to.equal(0)
    expect(nestingDepth({}, 5)).to.equal(1)
    expect(nestingDepth({ a: [{ b: 1 }], c: 2 }, 5)).to.equal(3)
    let deep: unknown = 1
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(nestingDepth(deep, 256)).to.equal(257)
    expect(nestingDepth(deep, 200_000)).to.equal(100_000)
  })
})
