/// <reference types="mocha" />
import { expect } from 'chai'
import { missingCapability } from '@cordis-subagents/shared'

const ALL = { persona: true, toolFilter: true, depthLimit: true }
const NONE = { persona: false, toolFilter: false, depthLimit: false }

describe('shared: capability check', () => {
  it('names the first option the capabilities cannot honour', () => {
    expect(missingCapability(ALL, { persona: 'p', toolFilter: {}, maxDepth: 1 })).to.equal(undefined)
    expect(missingCapability(NONE, {})).to.equal(undefined)
    expect(missingCapability(NONE, { persona: 'p', maxDepth: 1 })).to.deep.equal({ capability: 'persona', option: 'persona' })
    expect(missingCapability(NONE, { toolFilter: { allow: [] } })).to.deep.equal({ capability: 'toolFilter', option: 'toolFilter' })
    expect(missingCapability({ ...ALL, depthLimit: false }, { maxDepth: 0 })).to.deep.equal({ capability: 'depthLimit', option: 'maxDepth' })
  })
})
