/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import type { Agent } from '@cordis-subagents/agent'
import { MAX_TEAM_TASKS, TeamBoard, TeamError } from '../src/team/board.js'
import { z } from 'zod'
import { FAILED, type Harness, loadTool, setup } from './helpers.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 60)

async function codeOf(fn: () => unknown): Promise<string> {
  try {
    await fn()
  } catch (error) {
    expect(error).to.be.instanceOf(TeamError)
    return (error as TeamError).code
  }
  return expect.fail('expected a TeamError')
}

describe('a team\'s board: a bounded task list claimed exactly once, and members reached through their handles', () => {
  let h: Harness
  let coordinator: Agent

  beforeEach(async () => {
    h = await setup()
    coordinator = h.ctx.agents.create({ label: 'coordinator' })
  })
  afterEach(async () => { await h.stop() })

  const member = (label: string) => h.ctx.agents.create({ parent: coordinator, label })

  it('random schedules of N claimers: no task is claimed twice, none is lost, each is completed by its one claimer', async () => {
    await fc.assert(fc.asyncProperty(
      fc.scheduler(),
      fc.integer({ min: 2, max: 6 }),
      fc.array(fc.record({ adder: fc.nat(5), byId: fc.boolean() }), { minLength: 1, maxLength: 40 }),
      async (s, n, plan) => {
        const board = new TeamBoard(coordinator)
        const agents = Array.from({ length: n }, (_, i) => member(`w${i}`))
        agents.forEach((agent, i) => board.join(`w${i}`, agent))
        const members = await Promise.all(agents.map((agent) => board.member(agent)))
        const claims = new Map<number, string[]>()
        const completedBy = new Map<number, string>()
        let adding = plan.length
        const adder = async (index: number) => {
          await s.schedule(Promise.resolve(), `add ${index}`)
          board.add(members[plan[index].adder % n], `task ${index}`)
          adding--
        }
        const worker = async (me: number) => {
          while (adding > 0 || board.list().some((task) => task.state === 'open')) {
            await s.schedule(Promise.resolve(), `w${me} looks`)
            const open = board.list().filter((task) => task.state === 'open')
            const wanted = plan[me % plan.length].byId && open.length ? open[open.length - 1].id : undefined
            let claimed
            try {
              claimed = board.claim(members[me], wanted)
            } catch (error) {
              expect((error as TeamError).code).to.be.oneOf(['NO_OPEN_TASK', 'ALREADY_CLAIMED'])
              continue
            }
            claims.set(claimed.id, [...claims.get(claimed.id) ?? [], members[me].handle.id])
            await s.schedule(Promise.resolve(), `w${me} works on ${claimed.id}`)
            const done = board.complete(members[me], claimed.id, `done by w${me}`)
            completedBy.set(done.id, members[me].handle.id)
          }
        }
        const all = Promise.all([...plan.map((_, i) => adder(i)), ...members.map((_, i) => worker(i))])
        await s.waitAll()
        await all
        const tasks = board.list()
        expect(tasks).to.have.length(plan.length)
        for (const task of tasks) {
          expect(claims.get(task.id), `claims of task ${task.id}`).to.have.length(1)
          expect(task).to.include({ state: 'done', claimedBy: claims.get(task.id)![0] })
          expect(completedBy.get(task.id)).to.equal(task.claimedBy)
        }
        await Promise.all(agents.map((agent) => agent.dispose()))
      },
    ), { numRuns: RUNS })
  })

  it('refusals carry codes: a full list, a task claimed or done already, a completion by another member, an unknown task', async () => {
    const board = new TeamBoard(coordinator)
    const [a, b] = [member('a'), member('b')]
    board.join('a', a)
    board.join('b', b)
    const [ma, mb] = [await board.member(a), await board.member(b)]
    const first = board.add(ma, 'first')
    expect(board.claim(mb).id).to.equal(first.id)
    expect(await codeOf(() => board.claim(ma, first.id))).to.equal('ALREADY_CLAIMED')
    expect(await codeOf(() => board.claim(ma))).to.equal('NO_OPEN_TASK')
    expect(await codeOf(() => board.complete(ma, first.id))).to.equal('NOT_CLAIMER')
    board.complete(mb, first.id, 'ok')
    expect(await codeOf(() => board.complete(mb, first.id))).to.equal('ALREADY_DONE')
    expect(await codeOf(() => board.complete(mb, 99))).to.equal('NO_SUCH_TASK')
    expect(await codeOf(() => board.add(ma, '  '))).to.equal('INVALID_TASK')
    for (let i = 1; i < MAX_TEAM_TASKS; i++) board.add(ma, `task ${i}`)
    expect(await codeOf(() => board.add(ma, 'one too many'))).to.equal('TASK_LIST_FULL')
    // Done tasks count (a run's list drops none): the refusal says so, and what to do instead.
    expect(() => board.add(ma, 'one too many')).to.throw(`holds ${MAX_TEAM_TASKS} tasks (open, claimed and done together; `
      + `${MAX_TEAM_TASKS - 1} open), the most one coordinator run keeps, and it drops none until that run ends. Add no more: `
      + 'claim and finish the open ones, or put the rest of the work in your answer for your coordinator to hand out.')
    expect(board.list()).to.have.length(MAX_TEAM_TASKS)
    // The run ended: every call is refused, and nothing is left on the list.
    board.close()
    for (const refused of [() => board.list(), () => board.add(ma, 'more'), () => board.claim(mb), () => board.complete(ma, 2), () => board.member(a)]) {
      expect(await codeOf(refused)).to.equal('BOARD_CLOSED')
    }
    expect(board.closed).to.equal(true)
  })

  it('posts reach a running sibling\'s inbox with the sender\'s handle id; an idle, closed, unknown or ambiguous one is refused loudly', async () => {
    h.ctx.agents.registerModel('waits', {
      generate: ({ signal }) => new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
    })
    const board = new TeamBoard(coordinator)
    const [a, b, c1, c2] = ['a', 'b', 'c', 'c'].map((label) => h.ctx.agents.create({ parent: coordinator, label, model: 'waits' }))
    const outsider = member('x')
    for (const agent of [a, b, c1, c2]) board.join(agent.label!, agent)
    const ma = await board.member(a)
    expect(await codeOf(() => board.member(outsider))).to.equal('NOT_A_MEMBER')
    // b runs no turn: it would never read the message.
    expect(await codeOf(() => board.post(ma, 'b', 'hello'))).to.equal('MEMBER_CLOSED')
    expect(b.inbox.size).to.equal(0)
    const turns = [b, c1, c2].map((agent) => agent.run('work'))
    expect((await board.post(ma, 'b', 'hello b')).agent).to.equal(b)
    expect(b.inbox.take()).to.deep.equal([{ content: 'hello b', from: 'coordinator/a.1' }])
    expect(await codeOf(() => board.post(ma, 'nobody', 'hello'))).to.equal('NO_SUCH_MEMBER')
    expect(await codeOf(() => board.post(ma, 'a', 'myself'))).to.equal('NO_SUCH_MEMBER')
    // An agent's handle id reaches it only through a board it is a member of: an outsider's id names nobody here.
    expect(await codeOf(() => board.post(ma, outsider.handleId, 'hello'))).to.equal('NO_SUCH_MEMBER')
    expect(outsider.inbox.size).to.equal(0)
    // Two members named c run: the sender names one by its handle id.
    expect(await codeOf(() => board.post(ma, 'c', 'which one?'))).to.equal('AMBIGUOUS_MEMBER')
    expect((await board.post(ma, c2.handleId, 'you, c2')).agent).to.equal(c2)
    // c2 ends before reading it: the message comes back to its sender loudly (a runs no turn: its coordinator is told).
    await c2.dispose()
    expect(coordinator.inbox.take().map((message) => message.content)).to.deep.equal([
      '[team] A message from coordinator/a.1 to coordinator/c.4 was not read: c ended first.\n> you, c2',
    ])
    expect(await codeOf(() => board.post(ma, c2.handleId, 'again'))).to.equal('MEMBER_CLOSED')
    // A full inbox refuses the sender with its code (its bound is the member's own).
    const small = h.ctx.agents.create({ parent: coordinator, label: 'small', model: 'waits', maxInboxMessages: 1 })
    board.join('small', small)
    const smallTurn = small.run('work')
    await board.post(ma, 'small', 'first')
    const full = await board.post(ma, 'small', 'second').then(() => undefined, (error: { code?: string }) => error.code)
    expect(full).to.equal('INBOX_FULL')
    await small.dispose()
    expect((await smallTurn).stopReason).to.equal('aborted')
    // The unread one came back to the coordinator (its sender runs no turn).
    expect(coordinator.inbox.take().map((message) => message.content)).to.deep.equal([
      '[team] A message from coordinator/a.1 to coordinator/small.6 was not read: small ended first.\n> first',
    ])
    await Promise.all([b, c1].map((agent) => agent.dispose()))
    expect((await Promise.all(turns)).map((result) => result.stopReason)).to.deep.equal(['aborted', 'aborted', 'aborted'])
    expect(await codeOf(() => board.post(ma, 'b', 'hello'))).to.equal('MEMBER_CLOSED')
  })

  it('talk: the load claims <toolName>_tasks and <toolName>_post at load (a taken name fails it); without agent it fails', async () => {
    expect((await loadTool(h.ctx, { provider: 'spawn', toolName: 'solo', talk: true })).status).to.equal(FAILED)
    const talking = await loadTool(h.ctx, { agent: 'coordinator', toolName: 'crew', talk: true })
    expect(talking.status).to.not.equal(FAILED)
    expect(() => h.ctx.tools.reserve('crew_tasks')).to.throw(/crew_tasks/)
    expect(() => h.ctx.tools.reserve('crew_post')).to.throw(/crew_post/)
    h.ctx.tools.register({ name: 'other_post', description: 'taken', input: z.object({}), execute: () => ({ content: '' }) })
    expect((await loadTool(h.ctx, { agent: 'coordinator', toolName: 'other', talk: true })).status).to.equal(FAILED)
  })

  it('a start on its way is waited for, with a bound: a member that joins late is found; a start that never comes blocks nobody for long', async () => {
    h.ctx.agents.registerModel('waits', {
      generate: ({ signal }) => new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
    })
    const board = new TeamBoard(coordinator)
    const [a, b] = ['a', 'b'].map((label) => h.ctx.agents.create({ parent: coordinator, label, model: 'waits' }))
    const turn = b.run('work')
    // a's and b's delegations are being handed over: a calls the board (and posts to b) before either joined.
    let started!: () => void
    board.expect(new Promise<void>((resolve) => started = resolve))
    board.expect(new Promise<void>(() => {}))
    const finding = board.member(a)
    await Promise.resolve()
    board.join('a', a)
    board.join('b', b)
    started()
    const ma = await finding
    expect(ma.agent).to.equal(a)
    // A start that never comes (queued behind the service's gate) does not hold a post to a known member,
    // and a post to nobody ends NO_SUCH_MEMBER after the bounded wait.
    expect((await board.post(ma, 'b', 'hi')).agent).to.equal(b)
    expect(await codeOf(() => board.post(ma, 'nobody', 'hello'))).to.equal('NO_SUCH_MEMBER')
    await b.dispose()
    await turn
  })
})
