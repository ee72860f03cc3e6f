/// <reference types="mocha" />
// permission: escalate against fixture agents (real subprocesses): a permission request parks the
// run with a question, resume(answer) answers it and the run goes on; plus a served host of ours
// whose turn ends on a question (`_meta.cordisSubagents.question`).
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fixtureProvider, isAlive, reapAll, request, until } from './helpers.js'

describe('provider-acp: permission escalate (a permission request parks the run)', () => {
  const runs: SubagentRun[] = []

  async function start(mode: string, arg?: string, options = {}) {
    const req = request()
    const run = await fixtureProvider(mode, arg, { permission: 'escalate', ...options }).start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  function thrown(act: () => unknown): Error & { code?: string } {
    try {
      act()
    } catch (error) {
      return error as Error & { code?: string }
    }
    throw new Error('expected a throw')
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  it('parks with the request as the question; resume "allow" answers it, the tool runs and the run completes', async () => {
    const { run, updates } = await start('ask-permission')
    const first = await run.result
    expect(first.stopReason).to.equal('pending')
    const question = first.question!
    expect(question).to.deep.include({ kind: 'permission', path: [] })
    expect(question.id).to.match(/^q-[0-9a-f-]{36}$/)
    expect(question.options).to.deep.equal([{ id: 'yes', name: 'Allow' }, { id: 'always', name: 'Always allow' }, { id: 'no', name: 'Reject' }])
    expect(question.text).to.include('Delete build/').and.include('kind: delete').and.include('locations: /work/build')
      .and.include('"recursive":true').and.include('"Reject" (no, reject_once)')
    // Parked: the agent waits for the answer, its process lives, the prompt stays open.
    expect(run.question).to.deep.equal(question)
    expect(isAlive(run.pid!)).to.equal(true)
    expect(updates).to.deep.include({ kind: 'status', text: 'permission asked: Delete build/' })

    const final = await run.resume('allow')
    expect(final.stopReason).to.equal('completed')
    expect(final.output).to.equal('Delete build/: done (yes). ')
    expect(final.usage).to.deep.equal({ inputTokens: 5, outputTokens: 2 })
    expect(final.diagnostic, 'an answered question is no denial').to.equal(undefined)
    expect(updates.some((update) => update.kind === 'tool-call' && update.tool === 'Delete build/')).to.equal(true)
    expect(run.question).to.equal(undefined)
    // The first outcome stays the first; a late resume gets the final result.
    expect((await run.result).stopReason).to.equal('pending')
    expect(await run.resume('allow')).to.deep.equal(final)
  })

  it('an answer naming the reject option (by name, any case) refuses the call and the agent adapts', async () => {
    const { run, updates } = await start('ask-permission')
    expect((await run.result).stopReason).to.equal('pending')
    const final = await run.resume('  REJECT ')
    expect(final).to.deep.include({ stopReason: 'completed', output: 'Delete build/: refused, so I left it alone. ' })
    expect(updates.some((update) => update.kind === 'tool-call')).to.equal(false)
  })

  it('asks again on the next request: pending, pending, then completed; ids, names and keywords all answer', async () => {
    const { run } = await start('ask-permission', 'twice')
    const first = (await run.result).question!
    const second = await run.resume('yes')
    expect(second.stopReason).to.equal('pending')
    expect(second.question!.id).to.not.equal(first.id)
    expect(second.question!.text).to.include('Delete dist/')
    const final = await run.resume('Always allow')
    expect(final).to.deep.include({ stopReason: 'completed', output: 'Delete dist/: done (always). ' })
  })

  it('two requests at once: the second is shown once the first is answered', async () => {
    const { run } = await start('ask-permission', 'parallel')
    expect((await run.result).question!.text).to.include('Delete build/')
    const next = await run.resume('ALWAYS')
    expect(next.stopReason).to.equal('pending')
    expect(next.question!.text).to.include('Delete dist/')
    const final = await run.resume('no')
    // Both texts follow the last tool call: one message by the output rule.
    expect(final).to.deep.include({ stopReason: 'completed', output: 'Delete build/: done (always). Delete dist/: refused, so I left it alone. ' })
  })

  it('an answer that names no option is refused: pending again, the same question, a diagnostic listing the options', async () => {
    const { run, updates } = await start('ask-permission')
    const question = (await run.result).question!
    const again = await run.resume('maybe later')
    expect(again.stopReason).to.equal('pending')
    expect(again.question).to.deep.equal(question)
    expect(again.diagnostic).to.match(/^\[INVALID_REQUEST\] The answer "maybe later" names none of the options /)
    expect(again.diagnostic).to.include('"Allow" (yes, allow_once)').and.include('"Reject" (no, reject_once)')
    expect(updates.some((update) => update.kind === 'status' && /^answer refused/.test(update.text!))).to.equal(true)
    for (const bad of ['', '   ', 'x'.repeat(2 * 1024 * 1024)]) {
      const refused = await run.resume(bad)
      expect(refused.stopReason).to.equal('pending')
      expect(refused.diagnostic).to.match(/^\[INVALID_REQUEST\] The answer (must be a non-empty string|is at most \d+ characters)/)
    }
    expect(run.question).to.deep.equal(question)
    expect(isAlive(run.pid!)).to.equal(true)
    expect((await run.resume('yes')).stopReason).to.equal('completed')
  })

  it('resume while the turn runs (nothing asked) is refused with INVALID_REQUEST', async () => {
    const { run } = await start('delay', '300')
    expect(thrown(() => run.resume('yes')).code).to.equal('INVALID_REQUEST')
    expect((await run.result).stopReason).to.equal('completed')
  })

  it('cancel while parked answers the request cancelled (the agent ends its turn) and ends the run aborted', async () => {
    const { run } = await start('ask-permission')
    await run.result
    run.cancel('the holder gave up')
    expect(run.question).to.equal(undefined)
    const final = await run.resume('yes')
    expect(final.stopReason).to.equal('aborted')
    // The agent honoured it (the request answered cancelled → stopReason cancelled), not the cancelGrace fallback.
    expect(final.diagnostic).to.equal('Cancelled (the holder gave up).')
  })

  it('dispose while parked ends the run and its process', async () => {
    const { run } = await start('ask-permission')
    await run.result
    const pid = run.pid!
    await run.dispose()
    expect((await run.resume('yes')).stopReason).to.equal('aborted')
    await reapAll()
    expect(isAlive(pid)).to.equal(false)
  })

  it('a question unanswered for maxParkedMs ends the run as timeout, the request answered cancelled', async () => {
    const { run } = await start('ask-permission', undefined, { maxParkedMs: 200 })
    expect((await run.result).stopReason).to.equal('pending')
    await until(() => run.question === undefined, 'the parked question to expire')
    const final = await run.resume('yes')
    expect(final.stopReason).to.equal('timeout')
    expect(final.diagnostic).to.match(/^The run waited maxParkedMs \(200 ms\) for an answer to its permission question \("The agent asks permission/)
    expect(final.diagnostic).to.include('raise maxParkedMs')
  })
})

describe('provider-acp: a served host of ours whose turn ends on a question (_meta.cordisSubagents.question)', () => {
  const runs: SubagentRun[] = []

  async function start(arg?: string, options = {}) {
    const run = await fixtureProvider('served-question', arg, options).start(request()) as AcpRun
    runs.push(run)
    return run
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  it('reports pending with the host\'s question (any permission policy); the answer is the next prompt of the session', async () => {
    const run = await start('twice')
    const first = await run.result
    expect(first).to.deep.include({ stopReason: 'pending', output: 'Which branch?' })
    expect(first.question).to.deep.equal({ id: 'q-fixture-1', kind: 'ask', text: 'Which branch?', path: ['run-grandchild'], expiresAt: first.question!.expiresAt })
    expect(first.question!.expiresAt).to.be.a('number').above(Date.now())
    const second = await run.resume('main')
    expect(second.question).to.deep.include({ id: 'q-fixture-2', text: 'Squash the commits?' })
    const final = await run.resume('yes, squash')
    expect(final).to.deep.include({ stopReason: 'completed', output: 'answers: main | yes, squash' })
    // ACP usage is cumulative over the session: the last turn's figure.
    expect(final.usage).to.deep.equal({ inputTokens: 6, outputTokens: 3 })
  })

  it('cancel while parked ends the run aborted at once (no turn is in flight)', async () => {
    const run = await start()
    await run.result
    run.cancel()
    const final = await run.resume('main')
    expect(final.stopReason).to.equal('aborted')
    expect(final.diagnostic).to.match(/while waiting for an answer/)
  })

  it('an unanswered question ends the run as timeout after maxParkedMs', async () => {
    const run = await start(undefined, { maxParkedMs: 100 })
    await run.result
    await until(() => run.question === undefined, 'the question to expire')
    expect((await run.resume('main')).stopReason).to.equal('timeout')
  })
})
