import { Schema } from 'cordis'
import { expect } from 'chai'
import { unsetGroup } from '@cordis-subagents/shared'

describe('shared: unsetGroup', () => {
  const config = Schema.object({
    filter: unsetGroup(Schema.object({ allow: unsetGroup(Schema.array(String)), deny: unsetGroup(Schema.array(String)) }).description('Filter.')),
    hosts: unsetGroup(Schema.array(String)),
    labels: unsetGroup(Schema.dict(String)),
  })

  it('stays unset when not given: no {} or [] filled in, inside a given group either', () => {
    expect(config({})).to.deep.equal({})
    expect(config({ filter: {} })).to.deep.equal({ filter: {} })
    expect(config({ filter: { allow: [] } })).to.deep.equal({ filter: { allow: [] } })
    expect(config({ filter: { deny: ['x'] }, hosts: ['a'], labels: { k: 'v' } })).to.deep.equal({ filter: { deny: ['x'] }, hosts: ['a'], labels: { k: 'v' } })
  })

  it('checks what is given with the wrapped schema\'s own messages (the field\'s whole path)', () => {
    const check = config as (value: unknown) => unknown
    expect(() => check({ filter: { allow: 'x' } })).to.throw(/^\$\.filter\.allow expected array but got x$/)
    expect(() => check({ hosts: [1] })).to.throw(/^\$\.hosts\[0\] expected string but got 1$/)
    expect(config.dict!.filter.toString()).to.equal(Schema.object({ allow: Schema.array(String), deny: Schema.array(String) }).toString())
  })

  it('shows the console a choice with an empty default to render (its JSON), and keeps the description', () => {
    const json = new Schema(JSON.parse(JSON.stringify(config.toJSON())) as Schema)
    const filter = json.dict!.filter
    expect(filter.type).to.equal('union')
    expect(filter.meta.default).to.equal(undefined)
    expect(filter.meta.description).to.equal('Filter.')
    expect(filter.list!.map((choice) => [choice.type, choice.meta.default])).to.deep.equal([['object', {}]])
    expect(json.dict!.hosts.list!.map((choice) => [choice.type, choice.meta.default])).to.deep.equal([['array', []]])
    // A copy (`.description()`) is shown the same way.
    const described = JSON.parse(JSON.stringify(Schema.object({ hosts: unsetGroup(Schema.array(String)).description('Hosts.') }).toJSON()))
    const hosts = new Schema(described as Schema).dict!.hosts
    expect([hosts.type, hosts.meta.description, hosts.list![0].type]).to.deep.equal(['union', 'Hosts.', 'array'])
  })
})
