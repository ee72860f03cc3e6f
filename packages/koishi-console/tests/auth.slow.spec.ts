// The console's own users (@koishijs/plugin-auth on an in-memory SQLite database) in front of the page,
// under `koishi start` (tests/koishi-project.ts): below `viewAuthority` (3) a client gets no trees and no
// transcript; below `actAuthority` (4) it sees the trees but every action is refused by the console
// (`unauthorized`) and the child runs on; the admin (authority 5) cancels it.
import { expect } from 'chai'
import type { NodeView } from '@cordis-subagents/console'
import { eventually } from '@cordis-subagents/test-support'
import type { NodeMap } from '@cordis-subagents/koishi-console'
import { ConsoleClient } from './console-client.js'
import { type Project, startProject } from './koishi-project.js'

describe('koishi-console: the console\'s users and their authority (plugin-auth)', function () {
  this.timeout(120_000)
  let project: Project | undefined
  const clients: ConsoleClient[] = []

  before(async () => {
    project = await startProject({ auth: true })
  })
  after(async () => {
    for (const client of clients) client.close()
    const run = await project?.stop()
    expect(`${run?.stdout}\n${run?.stderr}`, 'no error logged').to.not.match(/\[E\]|cannot resolve plugin/)
  })

  const open = async (login?: [string, string]) => {
    const client = await ConsoleClient.open(project!.ws)
    clients.push(client)
    await eventually(() => 'entry' in client.data, 'the console sent its entries')
    if (!login) return client
    // On a loaded machine the console's entries come before plugin-auth is up: it waits for its database, then adds its
    // listeners (until then a call is answered 'not implemented'), then creates the admin account (until then the
    // login is refused). A login that never succeeds fails here with its last answer.
    let last: unknown
    await eventually(async () => {
      last = (await client.call('login/password', ...login)).error
      return last === undefined
    }, 'plugin-auth accepts the login', { timeout: 30_000, every: 100 }).catch((error: Error) => { throw new Error(`${error.message}; its last answer: ${String(last)}`) })
    return client
  }
  const held = (client: ConsoleClient) => Object.values((client.data.subagentNodes ?? {}) as NodeMap).find((view) => view.label === 'held child')

  it('an anonymous client and an assistant (3) cannot act; the assistant sees the tree; the admin (5) cancels', async () => {
    const admin = await open(['admin', 'admin-password'])
    await admin.call('fixture/start', 'held')
    const child: NodeView = await eventually(() => (held(admin)?.lastProgress === 'lookup returned' ? held(admin) : undefined), 'the admin sees the held child')

    const anonymous = await open()
    expect(anonymous.data.subagentNodes ?? null).to.equal(null)
    expect((await anonymous.call('subagents/transcript', child.runId)).error).to.equal('unauthorized')
    expect((await anonymous.call('subagents/cancel', child.runId)).error).to.equal('unauthorized')

    expect((await admin.call('fixture/watcher')).value).to.equal(true)
    const watcher = await open(['watcher', 'watcher-password'])
    await eventually(() => held(watcher), 'the assistant sees the held child')
    expect((await watcher.call('subagents/transcript', child.runId)).value).to.have.property('ok')
    for (const [event, ...args] of [['subagents/cancel'], ['subagents/answer', 'blue'], ['subagents/send', 'stop']]) {
      expect((await watcher.call(event, child.runId, ...args)).error, event).to.equal('unauthorized')
    }
    expect(held(admin)?.state, 'no refused action reached the child').to.equal('running')

    expect((await admin.call('subagents/cancel', child.runId)).value).to.deep.equal({ ok: true })
    await eventually(() => held(watcher)?.stopReason === 'aborted', 'the assistant sees it aborted')
  })
})
