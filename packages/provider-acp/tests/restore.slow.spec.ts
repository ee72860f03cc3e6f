/// <reference types="mocha" />
// provider.restore (a host restart): a journalled run's ACP session is continued in a new process
// with session/load. A parked run is parked again on its question; the permission request itself
// died with the old process, so the answer reaches the agent as a prompt.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { RunRecord, SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpProvider } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fixtureProvider, isAlive, reapAll, rejection, request } from './helpers.js'

describe('provider-acp: restore a run after a restart (session/load)', () => {
  const runs: SubagentRun[] = []
  const providers: AcpProvider[] = []
  let state: string

  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), 'acp-restore-'))
  })

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    await reapAll()
    rmSync(state, { recursive: true, force: true })
    assertNoLeftovers()
  })

  /** A provider of its own per "host start", over the `sessions` fixture that stores its sessions in `state`. */
  function host(mode = 'sessions') {
    const created = fixtureProvider(mode, undefined, { permission: 'escalate', env: { ACP_FIXTURE_STATE: state } })
    providers.push(created)
    return created
  }

  async function start(acp: AcpProvider, prompt: string, restore?: RunRecord) {
    const req = request({ prompt, runId: restore?.runId ?? 'run-first' })
    const run = (restore ? await acp.restore!(restore, req) : await acp.start(req)) as AcpRun
    runs.push(run)
    return run
  }

  /** The first start parks on a permission request; its host "dies" (the run and the process end); its record stays. */
  async function parkedRecord(): Promise<RunRecord> {
    const acp = host()
    const run = await start(acp, 'ask')
    const { question } = await run.result
    expect(question?.kind).to.equal('permission')
    const record: RunRecord = {
      runId: run.id, provider: 'acp', parentId: 'parent-1', depth: 1, state: 'parked', checkpoint: JSON.parse(JSON.stringify(run.checkpoint())), question,
    }
    const pid = run.pid!
    await run.dispose()
    await acp.stop()
    expect(isAlive(pid)).to.equal(false)
    return record
  }

  it('a parked run is parked again on its question in a new process; "allow" reaches the agent as a prompt naming the request', async () => {
    const record = await parkedRecord()
    expect(record.checkpoint).to.deep.include({ sessionId: (record.checkpoint as { sessionId: string }).sessionId, cwd: process.cwd() })
    expect((record.checkpoint as { options: unknown[] }).options).to.have.length(2)
    const run = await start(host(), 'unused: the run was parked', record)
    expect(run.childId).to.equal((record.checkpoint as { sessionId: string }).sessionId)
    expect(run.opened).to.equal('resumed')
    const first = await run.result
    expect(first.stopReason).to.equal('pending')
    // The same question; its deadline (`expiresAt`) runs from the restore on, as the restored run's maxParkedMs timer does.
    expect(first.question).to.deep.equal({ ...record.question, expiresAt: first.question!.expiresAt })
    expect(first.question!.expiresAt).to.be.a('number').at.least(Date.now())
    // A refused answer keeps it parked, as before the restart.
    expect((await run.resume('perhaps')).diagnostic).to.match(/names none of the options "Allow" \(yes, allow_once\); "Reject" \(no, reject_once\)/)
    const final = await run.resume('allow')
    expect(final.stopReason, final.diagnostic).to.equal('completed')
    expect(final.output).to.equal('got: Before your process was restarted you asked permission for a tool call (Delete build/); '
      + 'that request could not be kept open. The answer is "Allow" (allow_once): make that tool call again now, and continue the task.')
  })

  it('a run that was not parked comes back idle (interrupted); a message sent and wake() continue its session', async () => {
    const record = await parkedRecord()
    const run = await start(host(), '(the request prompt is not sent)', { ...record, state: 'closed' })
    expect((await run.result).stopReason).to.equal('interrupted')
    expect(() => run.wake()).to.throw(/Nothing to wake on/)
    run.send('pause')
    const final = await run.wake()
    expect(final.stopReason, final.diagnostic).to.equal('completed')
    expect(JSON.parse(final.output)).to.deep.include({ sid: run.childId, turn: 1 })
  })

  it('cancel of a run restored idle ends it aborted at once', async () => {
    const record = await parkedRecord()
    const run = await start(host(), 'x', { ...record, state: 'interrupted' })
    await run.result
    run.cancel()
    expect((await run.wake()).stopReason).to.equal('aborted')
  })

  it('an agent without loadSession, a session it no longer has, or a record without a checkpoint: ACP_RESTORE_FAILED, nothing left running', async () => {
    const record = await parkedRecord()
    const noLoad = await rejection(start(host('ask-permission'), 'x', record))
    expect(noLoad.code).to.equal('ACP_RESTORE_FAILED')
    expect(noLoad.message).to.match(/does not load sessions/)
    rmSync(state, { recursive: true, force: true })
    const forgotten = await rejection(start(host(), 'x', record))
    expect(forgotten.code).to.equal('ACP_RESTORE_FAILED')
    expect(forgotten.message).to.match(/could not load session .*Delegate the task again/)
    const bare = await rejection(start(host(), 'x', { ...record, checkpoint: undefined }))
    expect(bare.code).to.equal('ACP_RESTORE_FAILED')
    const relative = await rejection(start(host(), 'x', { ...record, checkpoint: { sessionId: 's', cwd: 'relative/dir' } }))
    expect(relative.message).to.match(/no absolute cwd/)
  })

  it('checkpoint() is undefined for an agent that cannot load sessions', async () => {
    const run = await start(host('ask-permission'), 'x')
    await run.result
    expect(run.checkpoint()).to.equal(undefined)
  })
})
