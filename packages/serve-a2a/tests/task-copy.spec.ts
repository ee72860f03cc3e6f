/// <reference types="mocha" />
// The in-memory store's copy of a task: what structuredClone makes, sharing nothing, bounded in its
// recursion, and an upper bound of the history's stored size that never falls under the exact one.
import { expect } from 'chai'
import { Role, type Message, type Task, TaskState } from '@a2a-js/sdk'
import { BoundedTaskStore } from '../src/task-store.js'
import { copyTask } from '../src/task-copy.js'
import { boundHistory } from '../src/task-history.js'
import { encodedBytes } from '../src/task-codec.js'

function message(id: string, content: NonNullable<Message['parts'][number]['content']>, metadata?: Record<string, unknown>): Message {
  return {
    messageId: id, contextId: 'c', taskId: 't', role: Role.ROLE_USER, metadata, extensions: [], referenceTaskIds: [],
    parts: [{ content, mediaType: 'text/plain', filename: '', metadata: undefined }],
  }
}

function task(history: Message[]): Task {
  return {
    id: 't', contextId: 'c', metadata: { cordisSubagents: { tokens: 45, work: { steps: 3 } } }, history,
    artifacts: [{ artifactId: 'answer', name: 'answer', description: '', parts: [], metadata: undefined, extensions: [] }],
    status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: '2026-01-01T00:00:00.000Z' },
  }
}

/** Every object and array reachable from `value`. */
function containers(value: unknown, out = new Set<object>()): Set<object> {
  if (value && typeof value === 'object') {
    out.add(value)
    for (const item of Object.values(value)) containers(item, out)
  }
  return out
}

const samples: Message[] = [
  message('plain', { $case: 'text', value: 'the answer' }),
  message('unicode', { $case: 'text', value: 'ünïcødé 😀 '.repeat(40) }, { note: 'ü', nested: { list: [1, true, null, 'x'] } }),
  message('escapes', { $case: 'text', value: '\u0001\u001f"\\\n\t'.repeat(50) }, { '\u0002key"': '\u0003' }),
  message('bytes', { $case: 'raw', value: Buffer.from([0, 1, 2, 250, 251, 252, 253]) }),
  message('data', { $case: 'data', value: { numbers: [-1.7976931348623157e308, 5e-324, 0], deep: { a: { b: { c: [[[]]] } } } } as never }),
]

describe('serve-a2a: the store\'s copy of a task', () => {
  it('equals structuredClone\'s copy (undefined fields kept, bytes as a Uint8Array) and shares no object with the task', () => {
    const original = task(samples)
    const copy = copyTask(original)
    expect(copy).to.deep.equal(structuredClone(original))
    expect(Object.keys(copy.history![0])).to.deep.equal(Object.keys(original.history![0]))
    const bytes = copy.history![3].parts[0].content
    expect(bytes?.value).to.be.instanceOf(Uint8Array)
    const ours = containers(copy)
    for (const shared of containers(original)) expect(ours.has(shared)).to.equal(false)
  })

  it('hands a client\'s deeply nested metadata (2,000 levels) to structuredClone past its own depth, and cannot bound it', () => {
    let deep: unknown = 'bottom'
    for (let i = 0; i < 2_000; i++) deep = [deep]
    const original = task([message('deep', { $case: 'text', value: 'x' }, { deep })])
    const bound = { bytes: 0 }
    const copy = copyTask(original, bound)
    expect(JSON.stringify(copy)).to.equal(JSON.stringify(original))
    expect(bound.bytes).to.equal(Infinity)
  })

  it('bounds the history\'s stored size from above, message by message and all together', () => {
    for (const sample of samples) {
      const bound = { bytes: 0 }
      copyTask(task([sample]), bound)
      expect(bound.bytes, sample.messageId).to.be.at.least(encodedBytes(sample))
    }
    const bound = { bytes: 0 }
    copyTask(task(samples), bound)
    expect(bound.bytes).to.be.at.least(samples.reduce((sum, m) => sum + encodedBytes(m), 0))
  })

  it('the store trims a history over maxHistoryBytes exactly as boundHistory does, and keeps one under it whole', async () => {
    const sizes = samples.map((m) => encodedBytes(m))
    const total = sizes.reduce((sum, size) => sum + size, 0)
    const context = { user: { isAuthenticated: true, userName: 'cred-a' } } as never
    for (const max of [total, total - 1, sizes.at(-1)!, 1]) {
      const store = new BoundedTaskStore({ max: 10, ttl: 60_000, maxHistoryBytes: max, isRunning: () => false })
      await store.save(task(samples), context)
      const expected = boundHistory(structuredClone(task(samples)), max)
      expect((await store.load('t', context))?.history, `maxHistoryBytes ${max}`).to.deep.equal(expected.history)
    }
  })
})
