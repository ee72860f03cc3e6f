/// <reference types="mocha" />
// ExitHolds: what a bin waits for before its process exits, held work that settles (or fails) and work held meanwhile.
import { expect } from 'chai'
import { ExitHolds } from '@cordis-subagents/shared'

describe('shared: ExitHolds', () => {
  it('settles once every held work settled, a failed one too, and what was held while it waited', async () => {
    const holds = new ExitHolds()
    const done: string[] = []
    let finishFirst!: () => void
    holds.hold(new Promise<void>((resolve) => { finishFirst = resolve }).then(() => {
      done.push('first')
      // Held while the bin already waits: waited for too.
      holds.hold(new Promise((resolve) => setTimeout(resolve, 5)).then(() => void done.push('later')))
    }))
    holds.hold(Promise.reject(new Error('a failed cleanup')))
    const settled = holds.settled().then(() => void done.push('settled'))
    setTimeout(finishFirst, 5)
    await settled
    expect(done).to.deep.equal(['first', 'later', 'settled'])
    await new ExitHolds().settled()
  })
})
