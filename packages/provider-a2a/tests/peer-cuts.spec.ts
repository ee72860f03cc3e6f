// Every cut of a remote's text by length (no server): a status text or progress update, a final status quoted in a
// diagnostic, a card's name and description, an error naming what the remote said, a foreign task id, a signature's
// kid, an endpoint's last error. Each ends on a whole character, never on half a surrogate pair, so the text stays
// well-formed UTF-16 (a lone surrogate becomes an escape strict peers refuse once it is JSON: PostgreSQL jsonb, Python).
import { generateKeyPairSync } from 'node:crypto'
import { expect } from 'chai'
import { Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk'
import { Redactor } from '@cordis-subagents/shared'
import type { SubagentUpdate } from '@cordis-subagents/subagents-service'
import { cardVerifier } from '../src/card-signature.js'
import { Endpoint, oneLine } from '../src/endpoint.js'
import { describeFailure } from '../src/host-failure.js'
import { describeRequestError } from '../src/request-error.js'
import { outcomeOf } from '../src/task-state.js'
import { TaskView } from '../src/task-view.js'
import { gettingTask } from '../src/wire.js'

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
/** A run of emoji past every cap here, after `pad` (both parities of the cut: one of them falls inside a pair). */
const emoji = (pad: string, count = 1_500) => pad + '😀'.repeat(count)
const PADS = ['', 'x']

function wellFormed(text: string | undefined, what: string) {
  expect(text, what).to.be.a('string')
  const at = text!.search(LONE)
  expect(at, `${what} holds half a character: ${JSON.stringify(text!.slice(Math.max(0, at - 6), at + 6))}`).to.equal(-1)
}

function statusUpdate(taskId: string, text: string, metadata?: Record<string, unknown>): StreamResponse {
  const message = {
    messageId: 'm-1', contextId: 'ctx-1', taskId, role: Role.ROLE_AGENT, metadata: undefined, extensions: [], referenceTaskIds: [],
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
  }
  return {
    payload: {
      $case: 'statusUpdate',
      value: { taskId, contextId: 'ctx-1', status: { state: TaskState.TASK_STATE_WORKING, message, timestamp: '2025-01-01T00:00:00Z' }, metadata },
    },
  } as unknown as StreamResponse
}

const TASK: Task = {
  id: 'task-1', contextId: 'ctx-1', artifacts: [], history: [], metadata: undefined,
  status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: '2025-01-01T00:00:00.000Z' },
}

describe('provider-a2a: a remote\'s text cut by length ends on a whole character', () => {
  for (const pad of PADS) {
    describe(`(the emoji ${pad ? 'after one ASCII character' : 'from the start'})`, () => {
      it('a status text forwarded as progress (subagent/update), and a progress text of ours, cut at 2,000 characters', () => {
        const view = new TaskView(1024 * 1024)
        view.applyTask(TASK)
        const updates: SubagentUpdate[] = [
          ...view.apply(statusUpdate('task-1', emoji(pad))),
          ...view.apply(statusUpdate('task-1', 'step', { cordisSubagents: { update: { kind: 'text', text: emoji(pad) } } })),
        ]
        expect(updates.map((update) => update.kind)).to.deep.equal(['status', 'text'])
        for (const update of updates) {
          wellFormed(update.text, `the ${update.kind} update`)
          expect(update.text!.length).to.be.within(1_999, 2_001)
          expect(update.text!.endsWith('😀…')).to.equal(true)
        }
      })

      it('the first foreign task id (in the debug line about ignored events), cut at 100 characters', () => {
        const view = new TaskView(1024 * 1024)
        view.applyTask(TASK)
        view.apply(statusUpdate(emoji(pad, 80), 'from another task'))
        expect(view.foreign).to.equal(1)
        wellFormed(view.firstForeignId, 'firstForeignId')
        expect(view.firstForeignId!.length).to.be.within(99, 100)
      })

      it('a final status quoted in the diagnostic ("It said: …"), cut at 2,000 characters', () => {
        const { headline } = outcomeOf(TaskState.TASK_STATE_FAILED, emoji(pad))
        wellFormed(headline, 'the headline')
        expect(headline).to.match(/😀…"$/)
      })

      it('a card\'s name or description on one line', () => {
        for (const max of [80, 300]) {
          const line = oneLine(emoji(pad, 400), max)
          wellFormed(line, `oneLine(…, ${max})`)
          expect(line.length).to.be.within(max, max + 1)
          expect(line.endsWith('😀…')).to.equal(true)
        }
      })

      it('a failed request described for a diagnostic (the remote\'s error text), cut at 300 and 1,000 characters', () => {
        const error = new Error(emoji(pad))
        wellFormed(describeFailure(error), 'describeFailure')
        expect(describeFailure(error).length).to.be.within(299, 300)
        const described = describeRequestError(error, undefined, new Redactor([]))
        wellFormed(described, 'describeRequestError')
        expect(described.length).to.be.within(999, 1_000)
      })

      it('a "task not found" answer kept as the TaskGoneError\'s message, cut at 300 characters', async () => {
        const notFound = Object.assign(new Error(emoji(pad)), { code: -32001 })
        const gone = await gettingTask(Promise.reject(notFound), () => true).then(() => undefined, (error: Error) => error)
        expect(gone?.name).to.equal('TaskGoneError')
        wellFormed(gone!.message, 'the TaskGoneError')
        expect(gone!.message.length).to.be.within(299, 300)
      })

      it('an endpoint\'s last error (provider.endpoints(), onHealth), cut at 500 characters', () => {
        const told: string[] = []
        const endpoint = new Endpoint(new URL('http://127.0.0.1:9000'), {
          check: { allowCrossOrigin: false, allowHttp: true },
          cardFetch: (() => Promise.reject(new Error('no card here'))) as typeof fetch,
          requestFetch: (() => Promise.reject(new Error('no request here'))) as typeof fetch,
          redactor: new Redactor([]), cardRefreshInterval: 60_000, retryDelay: 60_000,
          onHealth: (health) => told.push(health.lastError ?? ''),
        })
        endpoint.markDown(`tasks/get failed: ${emoji(pad)}`)
        expect(told).to.have.length(1)
        wellFormed(told[0], 'onHealth\'s lastError')
        wellFormed(endpoint.snapshot().lastError, 'the snapshot\'s lastError')
        expect(told[0].length).to.be.within(499, 500)
      })

      it('a signature that does not verify, its kid quoted, cut at 200 characters per signature', async () => {
        const jwk = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }), kid: 'ours' }
        const verify = cardVerifier({ cardKey: jwk }, (() => Promise.reject(new Error('no fetch'))) as typeof fetch, () => undefined)!
        const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: emoji(pad, 150) })).toString('base64url')
        const card = { name: 'signed', signatures: [{ protected: header, signature: 'c2ln' }] }
        const refused = await verify(card, 'http://127.0.0.1:9000/card').then(() => undefined, (error: Error) => error)
        expect(refused?.message).to.include('does not verify')
        wellFormed(refused!.message, 'the A2A_CARD_UNVERIFIED message')
      })
    })
  }
})
