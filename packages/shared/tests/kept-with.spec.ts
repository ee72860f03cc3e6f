/// <reference types="mocha" />
import { expect } from 'chai'
import { KeptWith } from '@cordis-subagents/shared'

describe('KeptWith: state kept with an object, on the object', () => {
  it('keeps one value per keeper and object, in the object\'s own bag (no WeakMap)', () => {
    const books = new KeptWith<string>('book')
    const accounts = new KeptWith<string>('account')
    const agent: { keptWith?: Record<symbol, unknown> } = { keptWith: undefined }
    const other = { keptWith: undefined }
    expect(books.get(agent)).to.equal(undefined)
    expect(books.set(agent, 'a book')).to.equal('a book')
    accounts.set(agent, 'an account')
    expect(books.get(agent)).to.equal('a book')
    expect(accounts.get(agent)).to.equal('an account')
    expect(books.get(other)).to.equal(undefined)
    // The value lives in the object's bag under a symbol of the keeper's own: it goes when the object goes.
    expect(Object.getOwnPropertySymbols(agent.keptWith).map(String)).to.have.members(['Symbol(book)', 'Symbol(account)'])
    // Two keepers of the same name (a service reloaded) do not see each other's state.
    expect(new KeptWith<string>('book').get(agent)).to.equal(undefined)
  })

  it('an object that declares no bag gets a hidden one; a frozen one, or one whose keptWith is its own, is kept in a WeakMap after all', () => {
    const kept = new KeptWith<number>('n')
    const plain = { id: 'plain' }
    kept.set(plain, 1)
    expect(kept.get(plain)).to.equal(1)
    // The caller's object looks as it did: no new key, the same JSON.
    expect(Object.keys(plain)).to.deep.equal(['id'])
    expect(JSON.stringify(plain)).to.equal('{"id":"plain"}')
    const frozen = Object.freeze({ id: 'frozen' })
    kept.set(frozen, 2)
    expect(kept.get(frozen)).to.equal(2)
    const foreign = { keptWith: 'not a bag' }
    kept.set(foreign, 3)
    expect(kept.get(foreign)).to.equal(3)
    expect(foreign.keptWith).to.equal('not a bag')
    const sealedBag = { keptWith: Object.freeze({}) }
    kept.set(sealedBag, 4)
    expect(kept.get(sealedBag)).to.equal(4)
    // A falsy value is a value; a deleted one reads undefined.
    const zero = { id: 'zero' }
    kept.set(zero, 0)
    expect(kept.get(zero)).to.equal(0)
    kept.delete(zero)
    expect(kept.get(zero)).to.equal(undefined)
  })
})
