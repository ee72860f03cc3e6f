/// <reference types="mocha" />
import { expect } from 'chai'
import { listenInTurn } from '../src/index.js'

describe('shared: listenInTurn', () => {
  it('runs binds of one fixed address one after another, in the order they came, a failed one releasing its turn', async () => {
    const order: string[] = []
    const bind = (name: string, fail = false) => async () => {
      order.push(`${name} starts`)
      await new Promise((resolve) => setTimeout(resolve, 5))
      order.push(`${name} ends`)
      if (fail) throw new Error(`${name} failed`)
      return name
    }
    const first = listenInTurn('127.0.0.1', 4000, bind('first', true))
    const second = listenInTurn('127.0.0.1', 4000, bind('second'))
    const elsewhere = listenInTurn('127.0.0.1', 4001, bind('elsewhere'))
    const settled = await Promise.allSettled([first, second, elsewhere])
    expect(settled.map((s) => s.status)).to.deep.equal(['rejected', 'fulfilled', 'fulfilled'])
    expect(order.indexOf('second starts')).to.be.greaterThan(order.indexOf('first ends'))
    expect(order.indexOf('elsewhere starts')).to.be.lessThan(order.indexOf('first ends'))
  })

  it('never holds port 0 (a free port each time): binds of it run at once', async () => {
    let running = 0
    let most = 0
    const bind = async () => {
      most = Math.max(most, ++running)
      await new Promise((resolve) => setTimeout(resolve, 5))
      running--
    }
    await Promise.all([listenInTurn('127.0.0.1', 0, bind), listenInTurn('127.0.0.1', 0, bind)])
    expect(most).to.equal(2)
  })
})
