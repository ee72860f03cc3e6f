import { expect } from 'chai'
import { checkShape, lineOfEntry, oneLine } from '../src/validate.js'
import { deepEqual } from '../src/reloader.js'

describe('config-watch checks', () => {
  it('finds the line of an entry by its id, quoted or not, with a comment, the nth time', () => {
    const text = '# app\n- id: tools\n  name: x\n-   id: "fork"   # the fork\n  name: y\n- name: z\n  id: \'fork\'\n'
    expect(lineOfEntry(text, 'tools')).to.equal(2)
    expect(lineOfEntry(text, 'fork')).to.equal(4)
    expect(lineOfEntry(text, 'fork', 2)).to.equal(7)
    expect(lineOfEntry(text, 'missing')).to.equal(undefined)
    // An id is text, not a pattern.
    expect(lineOfEntry('- id: a.b\n', 'a+b')).to.equal(undefined)
    expect(lineOfEntry('- id: "a\'\n', 'a'), 'quotes must pair').to.equal(undefined)
    expect(lineOfEntry('-id: a\n', 'a'), 'a dash needs a space').to.equal(undefined)
    expect(lineOfEntry('- id: ab\n', 'a')).to.equal(undefined)
    expect(lineOfEntry('- id: a x\n', 'a')).to.equal(undefined)
  })

  it('finds the line of an entry with a 100,000-character id, and names the duplicate (not an unreadable file)', () => {
    // The line was found with a RegExp built from the id: V8 refuses one that large ("Regular expression too large").
    const id = 'x'.repeat(100_000)
    const text = `- id: ${id}\n  name: x\n- id: '${id}'\n  name: y\n`
    expect(lineOfEntry(text, id, 2)).to.equal(3)
    const refused = checkShape([{ id, name: 'x' }, { id, name: 'y' }], text) as { code: string; line?: number }
    expect(refused.code).to.equal('CONFIG_SHAPE')
    expect(refused.line).to.equal(3)
  })

  it('accepts a list of named entries and lists those without an id', () => {
    expect(checkShape([{ id: 'a', name: 'x' }, { name: 'y' }], '')).to.deep.equal({ entries: [{ id: 'a', name: 'x' }, { name: 'y' }], withoutId: ['y'] })
  })

  it('refuses what the loader cannot run, saying which entry', () => {
    const refused = (data: unknown, text = '') => checkShape(data, text) as { code: string; reason: string; line?: number }
    expect(refused(undefined).reason).to.equal('the file must be a list of entries (`- id: …` / `name: …`), not empty')
    expect(refused({ tools: {} }).reason).to.match(/not a mapping$/)
    expect(refused([{ id: 'a', name: 'x' }, 'b']).reason).to.equal('entry 2 is a string, not a mapping with a name')
    expect(refused([{ id: 'a' }], '- id: a\n')).to.deep.equal({ code: 'CONFIG_SHAPE', reason: 'entry "a" has no name (the plugin\'s package)', line: 1 })
    expect(refused([{ id: 7, name: 'x' }]).reason).to.equal('entry 1: its id must be a string (quote it)')
    expect(refused([{ id: 'a', name: 'x' }, { id: 'a', name: 'y' }], '- id: a\n  name: x\n- id: a\n  name: y\n'))
      .to.deep.equal({ code: 'CONFIG_SHAPE', reason: 'id "a" is used by entries 1 and 2; ids must be unique', line: 3 })
  })

  it('compares parsed configs by value, ignoring key order and undefined keys', () => {
    expect(deepEqual([{ id: 'a', name: 'x', config: { b: [1, { c: 2 }] } }], [{ name: 'x', config: { b: [1, { c: 2 }] }, id: 'a', extra: undefined }])).to.equal(true)
    expect(deepEqual([{ id: 'a', name: 'x' }], [{ id: 'a', name: 'x', disabled: true }])).to.equal(false)
    expect(deepEqual({ __jsExpr: 'a' }, { __jsExpr: 'b' })).to.equal(false)
    expect(deepEqual([1], { 0: 1 })).to.equal(false)
  })

  it('puts an error on one bounded line without control characters', () => {
    expect(oneLine(new Error('bad \x1b[31mvalue\x1b[0m\nsecond line'))).to.equal('bad value')
    expect(oneLine('x'.repeat(400))).to.have.length(301)
  })
})
