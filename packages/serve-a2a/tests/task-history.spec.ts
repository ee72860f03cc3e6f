/// <reference types="mocha" />
// A task's history within maxHistoryBytes: every message is measured as the stored JSON (bytes as
// base64), whether it holds bytes or not, so the bound trims exactly at the byte it names.
import { expect } from 'chai'
import { Role, type Message, type Task, TaskState } from '@a2a-js/sdk'
import { CROSSING_KEY } from '@cordis-subagents/shared'
import { boundHistory, TRIMMED_ID } from '../src/task-history.js'
import { encodedBytes } from '../src/task-codec.js'
import { BoundedTaskStore } from '../src/task-store.js'

function message(id: string, content: NonNullable<Message['parts'][number]['content']>): Message {
  return {
    messageId: id, contextId: 'c', taskId: 't', role: Role.ROLE_USER, metadata: { note: 'ü' }, extensions: [], referenceTaskIds: [],
    parts: [{ content, mediaType: 'text/plain', filename: '', metadata: undefined }],
  }
}

function task(history: Message[]): Task {
  return {
    id: 't', contextId: 'c', artifacts: [], metadata: undefined, history,
    status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
  }
}

describe('serve-a2a: boundHistory measures each message as stored', () => {
  const text = message('m1', { $case: 'text', value: 'ünïcode text '.repeat(20) })
  const bytes = message('m2', { $case: 'raw', value: Buffer.from([0, 1, 2, 250, 251, 252, 253]) })
  const last = message('m3', { $case: 'text', value: 'the newest' })
  const sizes = [text, bytes, last].map((m) => encodedBytes(m))
  const total = sizes[0] + sizes[1] + sizes[2]

  it('keeps a history of exactly maxHistoryBytes whole (text and bytes alike)', () => {
    const bounded = boundHistory(task([text, bytes, last]), total)
    expect(bounded.history!.map((m) => m.messageId)).to.deep.equal(['m1', 'm2', 'm3'])
  })

  it('one byte less trims the oldest message, and the marker names its stored bytes', () => {
    const bounded = boundHistory(task([text, bytes, last]), total - 1)
    expect(bounded.history!.map((m) => m.messageId)).to.deep.equal([TRIMMED_ID, 'm2', 'm3'])
    expect(bounded.history![0].metadata?.[CROSSING_KEY]).to.deep.equal({ historyTrimmed: { messages: 1, bytes: sizes[0] } })
  })

  it('a message with bytes is measured with them as base64: one byte under its size trims it too', () => {
    const bounded = boundHistory(task([bytes, last]), sizes[1] + sizes[2] - 1)
    expect(bounded.history!.map((m) => m.messageId)).to.deep.equal([TRIMMED_ID, 'm3'])
    expect(bounded.history![0].metadata?.[CROSSING_KEY]).to.deep.equal({ historyTrimmed: { messages: 1, bytes: sizes[1] } })
  })

  it('a client message posing as the marker (its id, a count that is no number) is read as no count: nothing throws, and a store keeps the task', async () => {
    const poses = (count: unknown, size: unknown) => ({ ...message(TRIMMED_ID, { $case: 'text', value: 'not the server\'s' }),
      metadata: { [CROSSING_KEY]: { historyTrimmed: { messages: count, bytes: size } } } }) as Message
    for (const [count, size] of [[{ toString: 1 }, 5], [-3, 'x'], [Infinity, { valueOf: () => { throw new Error('boom') } }], [2.5, Number.MAX_SAFE_INTEGER + 2]]) {
      const bounded = boundHistory(task([poses(count, size), text, last]), sizes[2])
      expect(bounded.history!.map((m) => m.messageId)).to.deep.equal([TRIMMED_ID, 'm3'])
      // A whole number in it counts (the 5); anything else counts nothing.
      const trimmed = { messages: 1, bytes: (size === 5 ? 5 : 0) + sizes[0] }
      expect(bounded.history![0].metadata?.[CROSSING_KEY]).to.deep.equal({ historyTrimmed: trimmed })
    }
    const store = new BoundedTaskStore({ max: 10, ttl: 60_000, isRunning: () => false, maxHistoryBytes: sizes[2] })
    const context = undefined as never
    await store.save(task([text, last]), context)
    await store.save(task([poses({ toString: 1 }, 0), text, last]), context)
    expect((await store.load('t', context))?.history?.map((m) => m.messageId)).to.deep.equal([TRIMMED_ID, 'm3'])
  })
})
