/// <reference types="mocha" />
// What this server cuts before a client reads it (the `notifications/progress` message and a task's `statusMessage`,
// the unknown-cursor error of `tasks/list`) is cut on a character boundary: a cut by UTF-16 index that fell inside a
// surrogate pair left half an emoji, which JSON carries as a `\ud83d` escape that strict peers refuse (Python's UTF-8
// encoder, PostgreSQL jsonb).
import { expect } from 'chai'
import type { ToolUpdate } from '@cordis-subagents/tools'
import { progressLine } from '../src/progress.js'
import { SessionTasks } from '../src/tasks.js'

const EMOJI = '\u{1F600}'
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function expectWellFormed(text: string) {
  expect(LONE.test(text), `lone surrogate in ${JSON.stringify(text.slice(-40))}`).to.equal(false)
}

const update = (fields: Partial<ToolUpdate>) => ({ kind: 'progress', ...fields }) as ToolUpdate

describe('serve-mcp: cuts of text sent to a client', () => {
  it('a progress text whose 1024th unit is the first half of an emoji is cut before the emoji', () => {
    const line = progressLine(update({ text: 'p'.repeat(1023) + EMOJI }))
    expectWellFormed(line)
    expect(line).to.equal('p'.repeat(1023))
  })

  it('a text that fits is sent whole, emoji included', () => {
    const line = progressLine(update({ text: 'p'.repeat(1022) + EMOJI }))
    expect(line).to.equal('p'.repeat(1022) + EMOJI)
  })

  it('the first cut (before cleaning) never leaves half an emoji for the second to keep', () => {
    // 2047 invisible characters, removed by cleaning, then an emoji across the first cut at 2048 units.
    const line = progressLine(update({ text: '\u200b'.repeat(2047) + EMOJI + ' after' }))
    expectWellFormed(line)
  })

  it('a delegation update\'s kind and tool name are cut on a character boundary', () => {
    for (const pad of [30, 31]) {
      expectWellFormed(progressLine(update({ text: undefined, data: { kind: 'k'.repeat(pad) + EMOJI } })))
    }
    for (const pad of [126, 127]) {
      const line = progressLine(update({ text: undefined, data: { kind: 'tool-call', tool: 't'.repeat(pad) + EMOJI } }))
      expectWellFormed(line)
      expect(line.startsWith('tool-call ttt')).to.equal(true)
    }
  })

  it('tasks/list names an unknown cursor cut on a character boundary', async () => {
    const tasks = new SessionTasks({ maxTasks: 4, ttl: 60_000 })
    try {
      let refused: unknown
      try {
        await tasks.listTasks('c'.repeat(63) + EMOJI + 'more')
      } catch (error) {
        refused = error
      }
      expect(refused).to.be.instanceOf(Error)
      expectWellFormed((refused as Error).message)
      expect((refused as Error).message).to.equal(`unknown cursor ${'c'.repeat(63)}`)
    } finally {
      tasks.close()
    }
  })
})
