/// <reference types="mocha" />
// The log budget: lines an outside party can trigger are bounded per key and in all, counted and summarised, one line each.
import { expect } from 'chai'
import { withClocks } from '@cordis-subagents/test-support'
import { LogBudget, type LogBudgetOptions } from '@cordis-subagents/shared'

/** A budget on a hand-moved clock, and the lines it wrote (format and arguments joined by a space). */
function recorded(options: LogBudgetOptions = {}) {
  const lines: string[] = []
  const clock = { now: 1_000 }
  const budget = new LogBudget((format, ...args) => { lines.push([format, ...args].join(' ')) }, { now: () => clock.now, ...options })
  return { lines, clock, budget }
}

const summaries = (lines: string[]) => lines.filter((line) => line.includes('not logged'))

function cpuMs(work: () => void): number {
  const before = process.cpuUsage()
  work()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

describe('shared: LogBudget (log lines an outside party can trigger)', () => {
  it('passes the first perWindow lines of a key, counts the rest, and says which it wrote', () => {
    const { lines, budget } = recorded({ perWindow: 3 })
    const written = Array.from({ length: 10 }, (_, i) => budget.log('peer-a', 'junk %s', `#${i}`))
    expect(written).to.deep.equal([true, true, true, false, false, false, false, false, false, false])
    expect(lines).to.deep.equal(['junk %s #0', 'junk %s #1', 'junk %s #2'])
  })

  it('logWith renders a line only when it is written (a redaction is not paid for lines only counted)', () => {
    const { lines, budget } = recorded({ perWindow: 2 })
    let rendered = 0
    for (let i = 0; i < 1_000; i++) budget.logWith('peer-a', () => { rendered++; return ['junk %s', `#${i}\nmore`] })
    budget.flush()
    expect(rendered).to.equal(2)
    expect(lines).to.deep.equal([
      'junk %s #0 more', 'junk %s #1 more', '%s peer-a: 998 more lines like this were not logged (log budget: 2 per 60 s)',
    ])
  })

  it('the next line of a key after its window ended first says how many were not logged; the new window passes again', () => {
    const { lines, clock, budget } = recorded({ perWindow: 2, windowMs: 1_000 })
    for (let i = 0; i < 7; i++) budget.log('peer-a', 'junk %s', `#${i}`)
    clock.now += 999
    expect(budget.log('peer-a', 'junk %s', 'late'), 'the window is not over').to.equal(false)
    expect(summaries(lines)).to.deep.equal([])
    clock.now += 1
    expect(budget.log('peer-a', 'junk %s', 'next')).to.equal(true)
    expect(lines).to.deep.equal([
      'junk %s #0', 'junk %s #1',
      '%s peer-a: 6 more lines like this were not logged (log budget: 2 per 1 s)',
      'junk %s next',
    ])
  })

  it('flush() writes every pending summary once, now; the windows go on (what a key passed still counts)', () => {
    const { lines, budget } = recorded({ perWindow: 1 })
    for (let i = 0; i < 4; i++) budget.log('peer-a', 'a %s', i)
    budget.log('peer-b', 'b')
    budget.log('peer-c', 'c')
    budget.log('peer-c', 'c')
    budget.flush()
    expect(summaries(lines)).to.deep.equal([
      '%s peer-a: 3 more lines like this were not logged (log budget: 1 per 60 s)',
      '%s peer-c: 1 more line like this was not logged (log budget: 1 per 60 s)',
    ])
    budget.flush()
    expect(summaries(lines), 'nothing new to say').to.have.length(2)
    expect(budget.log('peer-a', 'a again'), 'flush gives no budget back').to.equal(false)
  })

  it('keys are apart, and the table is bounded: a new key past maxKeys forgets the oldest, summarising its count', () => {
    const { lines, budget } = recorded({ perWindow: 1, maxKeys: 2 })
    budget.log('peer-a', 'a')
    budget.log('peer-a', 'a')
    budget.log('peer-b', 'b')
    expect(lines).to.deep.equal(['a', 'b'])
    budget.log('peer-c', 'c')
    expect(lines).to.deep.equal(['a', 'b', '%s peer-a: 1 more line like this was not logged (log budget: 1 per 60 s)', 'c'])
    // peer-a was forgotten: it starts again, and so the table never holds more than maxKeys.
    expect(budget.log('peer-a', 'a')).to.equal(true)
    for (let i = 0; i < 10_000; i++) budget.log(`peer-${i}`, 'x')
    expect((budget as unknown as { keys: Map<string, unknown> }).keys.size).to.equal(2)
  })

  it('all keys together pass at most totalPerWindow lines a window, plus one summary of the rest', () => {
    const { lines, clock, budget } = recorded({ perWindow: 5, totalPerWindow: 20, maxKeys: 10_000 })
    for (let i = 0; i < 5_000; i++) budget.log(`made-up-key-${i}`, 'x %s', i)
    expect(lines).to.have.length(20)
    clock.now += 60_000
    budget.log('made-up-key-0', 'x %s', 'next window')
    expect(lines.slice(20)).to.deep.equal([
      '%s log budget: 4980 more lines were not logged (log budget: 20 lines of all keys per 60 s)',
      'x %s next window',
    ])
  })

  it('a summary the total has no room for joins the total\'s count (flush, eviction)', () => {
    const { lines, budget } = recorded({ perWindow: 1, totalPerWindow: 2, maxKeys: 2, name: 'serve-x' })
    budget.log('peer-a', 'a')
    budget.log('peer-a', 'a')
    budget.log('peer-b', 'b')
    budget.log('peer-b', 'b')
    budget.log('peer-c', 'c')
    budget.flush()
    expect(lines).to.deep.equal(['a', 'b', '%s serve-x: 3 more lines were not logged (log budget: 2 lines of all keys per 60 s)'])
  })

  it('every string and Error argument is put on one line and cut to maxChars, cut before it is cleaned', () => {
    const args: unknown[][] = []
    const budget = new LogBudget((_format, ...rest) => { args.push(rest) }, { perWindow: 1_000, totalPerWindow: 1_000, maxChars: 50 })
    budget.log('k', '%s %s %d %o', 'two\nlines\u001b[2J\u202e', new Error('boom\r\nagain'), 42, { kept: 'as is\n' })
    expect(args[0]).to.deep.equal(['two lines', 'boom again', 42, { kept: 'as is\n' }])
    const huge = `${'x'.repeat(4 << 20)}\n`
    budget.log('k', '%s', huge)
    expect(args[1]![0]).to.equal(`${'x'.repeat(50)}…`)
    // 4 MiB scanned whole costs about 50 ms a line; cut first, 100 lines cost well under that together.
    expect(cpuMs(() => { for (let i = 0; i < 100; i++) budget.log('k', '%s', huge) }), 'CPU ms for 100 lines').to.be.below(1_500)
  })

  it('a long key is cut and cleaned in its summary', () => {
    const { lines, budget } = recorded({ perWindow: 1, maxChars: 12 })
    const key = `peer\n\u001b[31m${'k'.repeat(1 << 20)}`
    budget.log(key, 'x')
    budget.log(key, 'x')
    budget.flush()
    expect(lines).to.deep.equal(['x', '%s peer kk…: 1 more line like this was not logged (log budget: 1 per 60 s)'])
  })

  it('windows are read on the monotonic clock: a wall-clock step forward ends none, a step back locks none out', async () => {
    const lines: string[] = []
    await withClocks(({ step, pass }) => {
      const budget = new LogBudget((format, ...args) => { lines.push([format, ...args].join(' ')) }, { perWindow: 1 })
      expect([budget.log('k', 'one'), budget.log('k', 'two')]).to.deep.equal([true, false])
      step(3_600_000)
      expect(budget.log('k', 'three'), 'the wall clock moved an hour, the window did not end').to.equal(false)
      step(-7_200_000)
      pass(60_000)
      expect(budget.log('k', 'four'), 'a minute passed').to.equal(true)
    })
    expect(lines).to.deep.equal(['one', '%s k: 2 more lines like this were not logged (log budget: 1 per 60 s)', 'four'])
  })

  it('an injected clock that goes back starts a new window (the budget holds, no key is locked out)', () => {
    const { lines, clock, budget } = recorded({ perWindow: 1 })
    budget.log('k', 'one')
    budget.log('k', 'two')
    clock.now -= 3_600_000
    expect(budget.log('k', 'three')).to.equal(true)
    expect(budget.log('k', 'four')).to.equal(false)
    expect(lines).to.deep.equal(['one', '%s k: 1 more line like this was not logged (log budget: 1 per 60 s)', 'three'])
  })
})
