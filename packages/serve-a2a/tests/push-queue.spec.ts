// A webhook's waiting updates (push-queue.ts): past the bound, the updates a snapshot replaces merge into one snapshot
// where the last of them was; the updates a task stops in and messages stay, in order; only past the bound with
// nothing left to merge do the oldest go.
import { expect } from 'chai'
import { TaskState } from '@a2a-js/sdk'
import { keptAsIs, type Waiting, WebhookQueue } from '../src/push-queue.js'

const status = (state: TaskState) => ({ payload: { $case: 'statusUpdate', value: { taskId: 't', status: { state } } } }) as never
const item = (body: string, kept = false): Waiting => ({ body, contentType: 'application/json', kept })
const task = (name: string) => ({ id: 't', name }) as never

function drain(queue: WebhookQueue): string[] {
  const bodies: string[] = []
  for (let next = queue.take(); next; next = queue.take()) bodies.push(next.body)
  return bodies
}

describe('serve-a2a: a webhook\'s waiting updates', () => {
  it('the states a task stops in and messages are kept as they are; working, submitted and artifacts merge', () => {
    for (const state of [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
      TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]) {
      expect(keptAsIs(status(state)), TaskState[state]).to.equal(true)
    }
    expect(keptAsIs({ payload: { $case: 'message', value: { taskId: 't' } } } as never)).to.equal(true)
    expect(keptAsIs(status(TaskState.TASK_STATE_WORKING))).to.equal(false)
    expect(keptAsIs(status(TaskState.TASK_STATE_SUBMITTED))).to.equal(false)
    expect(keptAsIs({ payload: { $case: 'artifactUpdate', value: { taskId: 't' } } } as never)).to.equal(false)
  })

  it('past the bound, the mergeable updates become one snapshot of the task as of the last of them, in its place', () => {
    const queue = new WebhookQueue((latest) => ({ body: `snapshot of ${(latest as unknown as { name: string }).name}`, contentType: 'application/json' }))
    expect(queue.add(item('w1'), task('after w1'), 4)).to.equal(undefined)
    queue.add(item('input-required', true), task('ignored: kept'), 4)
    queue.add(item('w2'), task('after w2'), 4)
    queue.add(item('w3'), task('after w3'), 4)
    expect(queue.add(item('completed', true), task('ignored: kept'), 4)).to.deep.equal({ coalesced: 2, dropped: 0 })
    expect(queue.size).to.equal(3)
    expect(drain(queue)).to.deep.equal(['input-required', 'snapshot of after w3', 'completed'])
  })

  it('kept updates go only past the bound of kept ones: never the snapshot, never a kept one while the bound holds them', () => {
    const queue = new WebhookQueue((latest) => ({ body: `snapshot of ${(latest as unknown as { name: string }).name}`, contentType: 'application/json' }))
    queue.add(item('m1'), task('after m1'), 2)
    queue.add(item('k1', true), undefined, 2)
    expect(queue.add(item('m2'), task('after m2'), 2)).to.deep.equal({ coalesced: 1, dropped: 0 })
    expect(queue.add(item('k2', true), undefined, 2)).to.deep.equal({ coalesced: 0, dropped: 0 })
    expect(queue.add(item('k3', true), undefined, 2)).to.deep.equal({ coalesced: 0, dropped: 1 })
    expect(drain(queue)).to.deep.equal(['snapshot of after m2', 'k2', 'k3'])
  })

  it('without a task (or a snapshot too large to make), the last mergeable update stands for the others', () => {
    const queue = new WebhookQueue(() => undefined)
    for (const body of ['w1', 'w2', 'w3']) queue.add(item(body), undefined, 2)
    expect(drain(queue)).to.deep.equal(['w3'])
  })

  it('with only kept updates past the bound, the oldest go (counted dropped); a forced collapse merges whatever waits', () => {
    const queue = new WebhookQueue(() => undefined)
    queue.add(item('f1', true), undefined, 2)
    queue.add(item('f2', true), undefined, 2)
    expect(queue.add(item('f3', true), undefined, 2)).to.deep.equal({ coalesced: 0, dropped: 1 })
    expect(drain(queue)).to.deep.equal(['f2', 'f3'])
    queue.add(item('w1'), task('a'), 64)
    queue.add(item('w2'), task('b'), 64)
    expect(queue.collapse(64)).to.deep.equal({ coalesced: 1, dropped: 0 })
    expect(queue.clear()).to.equal(1)
    expect(queue.size).to.equal(0)
  })
})
