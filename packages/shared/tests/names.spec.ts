/// <reference types="mocha" />
import { expect } from 'chai'
import { isName, NAME_PATTERN } from '@cordis-subagents/shared'

describe('shared: tool and provider names', () => {
  it('accepts 1-64 of A-Z a-z 0-9 _ - and nothing else', () => {
    for (const name of ['a', 'spawn', 'subagent_acp', 'A-9', 'x'.repeat(64)]) expect(isName(name), name).to.equal(true)
    for (const name of ['', 'x'.repeat(65), 'bad name', 'dot.ted', 'é', 'a\n', 3, undefined, null]) {
      expect(isName(name), String(name)).to.equal(false)
    }
    expect(NAME_PATTERN.test('spawn')).to.equal(true)
  })
})
