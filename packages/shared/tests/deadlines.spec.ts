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

  it('a cancelled entry never fires; cancelling the last one clears the timer', async () => {
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
})
