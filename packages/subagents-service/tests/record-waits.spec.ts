/// <reference types="mocha" />
// The checkpoint journal's bounded waits for runs' records: one timer for all of them.
import { expect } from 'chai'
import { RecordWaits } from '../src/durable/record-waits.js'

/** Whether the waits' timer (their deadline queue's) exists, and whether it keeps the host alive. */
const timerOf = (waits: RecordWaits) => {
  const timer = (waits as unknown as { deadlines: { timer?: NodeJS.Timeout } }).deadlines.timer
  return timer ? (timer.hasRef() ? 'ref' : 'unref') : 'none'
}

describe('durable journal: waits for records under one timer', () => {
  it('a written record ends its wait; a hung one ends after the bound, reported late; the timer holds no host once none waits', async () => {
    const late: string[] = []
    const waits = new RecordWaits(30, (runId) => late.push(runId))
    expect(timerOf(waits)).to.equal('none')
    let armed = 0
    const setTimeout = globalThis.setTimeout
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      armed++
      return setTimeout(...args)
    }) as typeof setTimeout
    let release!: () => void
    const hung = new Promise<void>(() => {})
    const slow = new Promise<void>((resolve) => { release = resolve })
    const ended: string[] = []
    const all = [
      waits.wait('hung-1', hung).then(() => ended.push('hung-1')),
      waits.wait('written', Promise.resolve()).then(() => ended.push('written')),
      waits.wait('slow', slow).then(() => ended.push('slow')),
      waits.wait('hung-2', hung).then(() => ended.push('hung-2')),
    ]
    globalThis.setTimeout = setTimeout
    expect(armed, 'one timer for four waits').to.equal(1)
    expect(timerOf(waits)).to.equal('ref')
    await all[1]
    release()
    await all[2]
    expect(ended).to.deep.equal(['written', 'slow'])
    await Promise.all(all)
    expect(ended).to.deep.equal(['written', 'slow', 'hung-1', 'hung-2'])
    expect(late).to.deep.equal(['hung-1', 'hung-2'])
    // Nobody waits: no timer keeps the host alive.
    expect(timerOf(waits)).to.equal('none')
    // A later wait arms again and ends with its record.
    await waits.wait('again', Promise.resolve())
    expect(late).to.deep.equal(['hung-1', 'hung-2'])
    expect(timerOf(waits), 'armed for the bound, held by nobody').to.equal('unref')
  })
})
