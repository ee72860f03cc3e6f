/// <reference types="mocha" />
import { expect } from 'chai'
import { DeadlineQueue } from '@cordis-subagents/shared'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('DeadlineQueue: deadlines of one duration behind one timer', () => {
  it('fires every entry once, in the order added, with one timer for all of them', async () => {
    const queue = new DeadlineQueue(20)
    const fired: number[] = []
    for (let i = 0; i < 100; i++) queue.add(() => fired.push(i))
    expect(queue.armed).to.equal(true)
    expect(queue.size).to.equal(100)
    // Bounded wait, generous on a busy machine: it fires, it does not hang.
    for (let waited = 0; fired.length < 100 && waited < 5000; waited += 10) await sleep(10)
    expect(fired).to.deep.equal(Array.from({ length: 100 }, (_, i) => i))
    expect(queue.size).to.equal(0)
    expect(queue.armed).to.equal(false)
  })

  it('a cancelled entry never fires; cancelling the last one leaves no timer keeping the process alive', async () => {
    const queue = new DeadlineQueue(15)
    const fired: string[] = []
    const cancelA = queue.add(() => fired.push('a'))
    const cancelB = queue.add(() => fired.push('b'))
    queue.add(() => fired.push('c'))
    cancelA()
    cancelA()
    cancelB()
    for (let waited = 0; fired.length < 1 && waited < 5000; waited += 10) await sleep(10)
    await sleep(30)
    expect(fired).to.deep.equal(['c'])
    const cancelD = queue.add(() => fired.push('d'))
    expect(queue.armed).to.equal(true)
    cancelD()
    expect(queue.armed).to.equal(false)
    expect(queue.size).to.equal(0)
    await sleep(30)
    expect(fired).to.deep.equal(['c'])
  })

  it('an entry added by a firing entry gets its own full duration', async () => {
    const queue = new DeadlineQueue(10)
    const fired: string[] = []
    queue.add(() => {
      fired.push('first')
      queue.add(() => fired.push('second'))
    })
    for (let waited = 0; fired.length < 2 && waited < 5000; waited += 5) await sleep(5)
    expect(fired).to.deep.equal(['first', 'second'])
    expect(queue.size).to.equal(0)
  })

  it('one entry after another reuses the idle timer: made once, never keeping the process alive while idle', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length
    const before = timers()
    const native = globalThis.setTimeout
    let made = 0
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      made++
      return native(...args)
    }) as typeof setTimeout
    const queue = new DeadlineQueue(60_000)
    try {
      for (let i = 0; i < 1000; i++) {
        const cancel = queue.add(() => { throw new Error('a cancelled entry fired') })
        expect(queue.armed).to.equal(true)
        cancel()
        expect(queue.armed).to.equal(false)
      }
    } finally {
      globalThis.setTimeout = native
    }
    expect(made).to.equal(1)
    // Idle, its timer is unref'd: it keeps no process alive (an armed one would be counted here).
    expect(timers()).to.equal(before)
    queue.add(() => {})
    expect(timers()).to.equal(before + 1)
    queue.close()
    expect(timers()).to.equal(before)
  })

  it('an entry added while an older, earlier timer idles still fires no sooner than its own duration', async () => {
    const queue = new DeadlineQueue(40)
    queue.add(() => {})()
    await sleep(25)
    const added = performance.now()
    let firedAfter = -1
    queue.add(() => { firedAfter = performance.now() - added })
    for (let waited = 0; firedAfter < 0 && waited < 5000; waited += 5) await sleep(5)
    // Timers may fire a millisecond short of their delay (rounding); never the 25 ms the idle timer had left.
    expect(firedAfter).to.be.at.least(39)
    expect(queue.size).to.equal(0)
  })

  it('close drops every entry unfired and clears the timer; a cancel after it is harmless', async () => {
    const queue = new DeadlineQueue(10)
    const fired: string[] = []
    const cancels = ['a', 'b', 'c'].map((name) => queue.add(() => fired.push(name)))
    queue.close()
    expect(queue.size).to.equal(0)
    expect(queue.armed).to.equal(false)
    for (const cancel of cancels) cancel()
    expect(queue.size).to.equal(0)
    await sleep(40)
    expect(fired).to.deep.equal([])
    // Still usable: a new entry fires.
    queue.add(() => fired.push('d'))
    for (let waited = 0; fired.length < 1 && waited < 5000; waited += 5) await sleep(5)
    expect(fired).to.deep.equal(['d'])
  })
})
