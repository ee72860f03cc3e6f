/// <reference types="mocha" />
import { expect } from 'chai'
import { Context, Service } from 'cordis'
import { injected, withoutCallerTracing } from '@cordis-subagents/shared'

/** A service with one scope-bound method, as `ctx.subagents.register` is. */
class Shelf extends Service {
  readonly items = new Set<string>()
  constructor(ctx: Context) { super(ctx, 'shelf', true) }
  put(item: string) {
    const self = withoutCallerTracing(this)
    return this.ctx.effect(() => {
      self.items.add(item)
      return () => { self.items.delete(item) }
    })
  }
}

declare module 'cordis' {
  interface Context {
    shelf: Shelf
  }
}

describe('caller tracing: injected and withoutCallerTracing', () => {
  it('injected(ctx, name) binds a scope-bound method to the calling plugin, like ctx.<name>: a reload or dispose undoes it', async () => {
    const app = new Context()
    app.plugin(Shelf)
    const fork = app.plugin({ name: 'putter', inject: ['shelf'], apply: (ctx: Context, config: { item: string }) => { injected(ctx, 'shelf').put(config.item) } }, { item: 'a' })
    await app.lifecycle.flush()
    const shelf = withoutCallerTracing(app.shelf)
    expect([...shelf.items]).to.deep.equal(['a'])
    fork.update({ item: 'b' })
    await app.lifecycle.flush()
    expect([...shelf.items]).to.deep.equal(['b'])
    fork.dispose()
    expect([...shelf.items]).to.deep.equal([])
    await app.stop()
  })

  it('injected(ctx, name) throws, naming the service, when it is not there', async () => {
    const app = new Context()
    expect(() => injected(app, 'shelf')).to.throw('"shelf" is not available')
    await app.stop()
  })

  it('withoutCallerTracing gives the service object itself; a plain object is returned as it is', async () => {
    const app = new Context()
    app.plugin(Shelf)
    await app.lifecycle.flush()
    const traced = app.shelf
    const raw = withoutCallerTracing(traced)
    expect(raw).to.not.equal(traced)
    expect(raw).to.be.instanceOf(Shelf)
    expect(withoutCallerTracing(raw)).to.equal(raw)
    const plain = { a: 1 }
    expect(withoutCallerTracing(plain)).to.equal(plain)
    await app.stop()
  })
})
