/// <reference types="mocha" />
import { expect } from 'chai'
import { toolFilterProblem } from '@cordis-subagents/shared'

describe('shared: tool filter validation', () => {
  it('loose: an object whose allow / deny are string arrays', () => {
    expect(toolFilterProblem({}, 'filter')).to.equal(undefined)
    expect(toolFilterProblem({ allow: ['read'], deny: [] }, 'filter')).to.equal(undefined)
    expect(toolFilterProblem({ allow: ['any string at all'] }, 'filter')).to.equal(undefined)
    expect(toolFilterProblem(null, 'filter')).to.include('filter must be an object')
    expect(toolFilterProblem('read', 'filter')).to.include('filter must be an object')
    expect(toolFilterProblem({ allow: 'read' }, 'filter')).to.equal('filter.allow must be an array of tool names.')
    expect(toolFilterProblem({ deny: ['a', 3] }, 'filter')).to.equal('filter.deny must be an array of tool names.')
  })

  it('strict: also no unknown keys, tool names only, and never empty', () => {
    expect(toolFilterProblem({ allow: [] }, 'request.toolFilter', true)).to.equal(undefined)
    expect(toolFilterProblem({ deny: [] }, 'request.toolFilter', true)).to.equal(undefined)
    expect(toolFilterProblem({ allow: ['read'], deny: ['shell'] }, 'request.toolFilter', true)).to.equal(undefined)
    expect(toolFilterProblem([], 'f', true)).to.include('must be an object')
    expect(toolFilterProblem({}, 'f', true)).to.include('f is empty')
    expect(toolFilterProblem({ allow: undefined }, 'f', true)).to.include('f is empty')
    expect(toolFilterProblem({ alow: ['a'] }, 'f', true)).to.include('unknown key "alow"')
    expect(toolFilterProblem({ allow: ['read', ''] }, 'f', true)).to.include('f.allow[1] is ""')
    expect(toolFilterProblem({ deny: ['bad name'] }, 'f', true)).to.include('f.deny[0]')
  })
})
