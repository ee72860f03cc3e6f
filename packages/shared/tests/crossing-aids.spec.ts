/// <reference types="mocha" />
import { expect } from 'chai'
import {
  aidsFrom, aidsOf, crossingEnv, crossingFromMeta, crossingMeta, remoteHandle, servedLimits, strictestCrossing, TELL_BOUNDS, toldData,
  toldFrom, ToldRelay, treeCrossing,
} from '@cordis-subagents/shared'

/** A parent as the relay sees one: an inbox that keeps what is posted, and refuses past `limit` like an agent's. */
function parentWithInbox(limit = 1024) {
  const posted: Array<{ content: string; from: string }> = []
  return {
    handleId: 'root',
    disposed: false,
    posted,
    inbox: {
      post(content: string, _delegation: undefined, from: string) {
        if (posted.length >= limit) throw Object.assign(new Error(`${limit} unread messages`), { code: 'INBOX_FULL' })
        posted.push({ content, from })
      },
    },
  }
}

describe('shared: the aids that cross (budget note, tell_parent) and a told message\'s way back', () => {
  it('a request\'s budgetNote / tellParent cross in _meta with defaults filled in, never in the environment', () => {
    const crossing = treeCrossing({ depth: 1, agentOptions: { budgetNote: true, tellParent: true } })
    expect(crossing.aids).to.deep.equal({ budgetNote: {}, tellParent: { maxLength: 2000, maxMessages: 20 } })
    const read = crossingFromMeta(JSON.parse(JSON.stringify(crossingMeta(crossing))))
    expect(read.aids).to.deep.equal(crossing.aids)
    expect(Object.values(crossingEnv(crossing)).join(' ')).not.to.match(/tell|budgetNote/i)
    expect(treeCrossing({ depth: 1, agentOptions: {} }).aids).to.equal(undefined)
    expect(treeCrossing({ depth: 1 }).aids).to.equal(undefined)
  })

  it('reads aids defensively: bounds clamped to their ceilings, malformed ones dropped', () => {
    expect(aidsFrom({ tellParent: { maxLength: 1e9, maxMessages: -3 } })).to.deep.equal({
      tellParent: { maxLength: TELL_BOUNDS.maxLengthCeiling, maxMessages: TELL_BOUNDS.maxMessages },
    })
    expect(aidsFrom({ budgetNote: { wrapUpAt: 7 } })).to.deep.equal({ budgetNote: {} })
    expect(aidsFrom({ budgetNote: { wrapUpAt: 0.5 } })).to.deep.equal({ budgetNote: { wrapUpAt: 0.5 } })
    expect(aidsFrom({ budgetNote: 'yes', tellParent: 1 })).to.equal(undefined)
    expect(aidsFrom('aids')).to.equal(undefined)
    expect(aidsOf({ budgetNote: false, tellParent: { maxMessages: 3 } })).to.deep.equal({ tellParent: { maxLength: 2000, maxMessages: 3 } })
  })

  it('a served host takes the request\'s aids, never its own process\'s; strictest keeps the first', () => {
    const host = { rootCrossing: { aids: { budgetNote: {} } }, rootDepth: 0 }
    expect(servedLimits(host, {}).aids).to.equal(undefined)
    const tellParent = { maxLength: 5, maxMessages: 1 }
    expect(servedLimits(host, { aids: { tellParent } }).aids).to.deep.equal({ tellParent })
    expect(strictestCrossing({}, { aids: { budgetNote: {} } }, { aids: { tellParent } }).aids).to.deep.equal({ budgetNote: {} })
  })

  it('the parent\'s relay holds a child to the offered bounds, whatever the child does', () => {
    const parent = parentWithInbox()
    const relay = new ToldRelay(parent, remoteHandle(parent, 'acp', 'run-1'), { maxLength: 10, maxMessages: 2 })
    expect(relay.deliver('first')).to.deep.equal({ sent: 1, of: 2 })
    expect(relay.deliver('x'.repeat(11))).to.include({ code: 'TELL_REFUSED' })
    expect(relay.deliver('')).to.include({ code: 'TELL_REFUSED' })
    expect(relay.deliver({ text: 'not a string' })).to.include({ code: 'TELL_REFUSED' })
    expect(relay.deliver('sec\u0007ond')).to.deep.equal({ sent: 2, of: 2 })
    expect(relay.deliver('third')).to.include({ code: 'TELL_LIMIT' })
    // Labelled with the child's handle; control characters of the untrusted child are stripped.
    expect(parent.posted).to.deep.equal([{ content: 'first', from: 'root/acp.run-1' }, { content: 'second', from: 'root/acp.run-1' }])
  })

  it('refusals: not offered, no parent, a disposed parent, a full inbox', () => {
    const parent = parentWithInbox(1)
    expect(new ToldRelay(parent, 'x', undefined).deliver('hi')).to.include({ code: 'TELL_REFUSED' })
    expect(new ToldRelay(undefined, 'x', { maxLength: 10, maxMessages: 5 }).deliver('hi')).to.include({ code: 'NO_PARENT' })
    const relay = new ToldRelay(parent, 'x', { maxLength: 10, maxMessages: 5 })
    expect(relay.deliver('one')).to.deep.equal({ sent: 1, of: 5 })
    expect(relay.deliver('two')).to.include({ code: 'INBOX_FULL' })
    expect(new ToldRelay({ ...parentWithInbox(), disposed: true }, 'x', { maxLength: 10, maxMessages: 5 }).deliver('hi')).to.include({ code: 'NO_PARENT' })
    expect(parent.posted).to.have.length(1)
  })

  it('an A2A told part is ours only with our key', () => {
    expect(toldFrom(toldData('hello'))).to.equal('hello')
    expect(toldFrom({ told: 'hello' })).to.equal(undefined)
    expect(toldFrom({ cordisSubagents: { told: 5 } })).to.equal(undefined)
    expect(remoteHandle(undefined, 'a2a', 'r')).to.equal('parent/a2a.r')
  })
})
