/// <reference types="mocha" />
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import { MAX_FOLLOW_UPS_PER_RUN, MAX_QUEUED_FOLLOW_UPS } from '../src/index.js'
import { FollowUps } from '../src/follow-ups.js'
import { OutputBuffer } from '../src/output.js'
import { assertNoLeftovers, fixtureProvider, reapAll, request, until } from './helpers.js'

function codeOf(action: () => void): string | undefined {
  try {
    action()
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

describe('provider-acp: follow-up messages (run.send) against the steer fixture (real subprocesses)', () => {
  const runs: SubagentRun[] = []

  async function start(firstTurnMs = 400) {
    const req = request()
    const run = await fixtureProvider('steer', String(firstTurnMs)).start(req)
    runs.push(run)
    return { run, send: (message: string) => run.send!(message), updates: req.updates }
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  it('sends each queued message as a new session/prompt in the same session once the turn ended; one result for all turns', async () => {
    const { run, send, updates } = await start()
    send('alpha')
    send('beta')
    const result = await run.result
    // The fixture names every follow-up of its session: both reached the same session, in order.
    // The output is the last turn's text only (the first turn's is not in it).
    expect(result).to.deep.equal({ stopReason: 'completed', output: 'read: alpha beta', usage: { inputTokens: 30, outputTokens: 6 } })
    const statuses = updates.filter((update) => update.kind === 'status').map((update) => update.text)
    expect(statuses).to.deep.equal(['follow-up message sent (turn 2)', 'follow-up message sent (turn 3)'])
    // Usage is the session's cumulative figure, reported as it grew turn by turn.
    expect(updates.filter((update) => update.kind === 'usage').map((update) => update.usage?.inputTokens)).to.deep.equal([10, 20, 30])
    expect(codeOf(() => send('gamma'))).to.equal('NOT_RUNNING')
  })

  it('a message sent as a follow-up turn ends is answered in a turn of its own or refused NOT_RUNNING, never lost', async () => {
    const { run, send, updates } = await start(200)
    send('one')
    await until(() => updates.some((update) => update.text === 'read: one'), 'the answer to the first follow-up', 10_000)
    // Turn 2 has answered; its PromptResponse may or may not have been handled yet.
    const code = codeOf(() => send('two'))
    const result = await run.result
    if (code === undefined) expect(result.output).to.equal('read: one two')
    else {
      expect(code).to.equal('NOT_RUNNING')
      expect(result.output).to.equal('read: one')
    }
  })

  it('a turn that ends other than end_turn ends the run at once; the queued messages are reported as not delivered', async () => {
    const { run, send } = await start()
    send('stop:refusal')
    send('never sent 1')
    send('never sent 2')
    const result = await run.result
    expect(result.stopReason).to.equal('refusal')
    expect(result.output).to.equal('stopping with refusal')
    expect(result.diagnostic).to.contain('2 follow-up messages were not delivered').and.contain('refusal')
    expect(result.output).to.not.contain('never sent')
  })

  it('cancel during a follow-up turn cancels that turn and drops the queue', async () => {
    const { run, send, updates } = await start(100)
    send('wait')
    send('dropped')
    await until(() => updates.some((update) => update.text === 'waiting in a follow-up turn'), 'the follow-up turn to start', 10_000)
    run.cancel('the parent changed its mind')
    expect(codeOf(() => send('after cancel'))).to.equal('NOT_RUNNING')
    const result = await run.result
    expect(result.stopReason).to.equal('aborted')
    expect(result.output).to.equal('waiting in a follow-up turn')
    expect(result.diagnostic).to.contain('1 follow-up message was not delivered').and.contain('the parent changed its mind')
  })

  it('refuses a message past the queue with INVALID_REQUEST, and an empty one', async () => {
    const { run, send } = await start()
    expect(codeOf(() => send(''))).to.equal('INVALID_REQUEST')
    for (let i = 0; i < MAX_QUEUED_FOLLOW_UPS; i++) send(`m${i}`)
    expect(codeOf(() => send('one too many'))).to.equal('INVALID_REQUEST')
    const result = await run.result
    expect(result.stopReason).to.equal('completed')
    expect(result.output).to.equal(`read: ${Array.from({ length: MAX_QUEUED_FOLLOW_UPS }, (_, i) => `m${i}`).join(' ')}`)
  })
})

describe('provider-acp: FollowUps (the queue)', () => {
  it('bounds messages per run as well as waiting ones', () => {
    const queue = new FollowUps()
    for (let i = 0; i < MAX_FOLLOW_UPS_PER_RUN; i++) {
      queue.push(`m${i}`)
      expect(queue.next()).to.equal(`m${i}`)
    }
    expect(codeOf(() => queue.push('one more'))).to.equal('INVALID_REQUEST')
    expect(queue.turns).to.equal(MAX_FOLLOW_UPS_PER_RUN + 1)
  })

  it('once closed refuses NOT_RUNNING, hands out nothing, and settle names the dropped count', () => {
    const queue = new FollowUps()
    queue.push('a')
    queue.push('b')
    const result = queue.settle({ stopReason: 'error', output: '', diagnostic: 'The agent died.' })
    expect(result.diagnostic).to.equal('2 follow-up messages were not delivered: the run ended (error) before they could be sent as a prompt. The agent died.')
    expect(queue.next()).to.equal(undefined)
    expect(codeOf(() => queue.push('c'))).to.equal('NOT_RUNNING')
  })

  it('settle leaves a result alone when nothing was dropped', () => {
    const result = { stopReason: 'completed' as const, output: 'x' }
    expect(new FollowUps().settle(result)).to.equal(result)
  })
})

describe('provider-acp: OutputBuffer across turns', () => {
  it('a new turn starts the output afresh; until it says something the previous turn\'s output stands', () => {
    const output = new OutputBuffer(1024)
    output.push('turn one text')
    output.newTurn()
    expect(output.text()).to.equal('turn one text')
    output.toolCall()
    expect(output.text()).to.equal('turn one text')
    output.push('turn two answer')
    expect(output.text()).to.equal('turn two answer')
    output.newTurn()
    output.push('   ')
    expect(output.text()).to.equal('turn two answer')
  })

  it('each turn gets the whole byte budget, and dropped bytes follow the text they belong to', () => {
    const output = new OutputBuffer(8)
    output.push('0123456789')
    expect(output.dropped()).to.equal(2)
    output.newTurn()
    expect(output.dropped()).to.equal(2)
    output.push('abcdefgh')
    expect(output.text()).to.equal('abcdefgh')
    expect(output.dropped()).to.equal(0)
  })
})
