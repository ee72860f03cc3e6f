/// <reference types="mocha" />
// A start overtaken by a reload fails no one. With `shared` on a PostgreSQL that never answers (a firewall drop, a
// stuck proxy: here a local listener that accepts and never says a word), the start hangs in its connect; the entry is
// edited again meanwhile (`shared` removed) and the new load serves. The old start used to fail with STORE_UNAVAILABLE once
// the client gave up (10 s), which cancelled the entry's scope: the server stopped listening while the entry read ACTIVE.
// Now the reload's stop ends the old start's PostgreSQL clients at once and that start's failure is dropped.
// Two edits in a row (no `shared`): the start the second overtook returned without serving, and cordis exposed that
// stopped instance as ctx.a2aServer anyway, so the live load's own exposure failed ("service a2aServer has been
// registered") and cancelled the entry. The service is now exposed by its start once it listens, never by an overtaken one.
import { createServer, type Server, type Socket } from 'node:net'
import { expect } from 'chai'
import { accepts, eventually, freePort } from '@cordis-subagents/test-support'
import { A2A_APP } from './helpers.js'
import { ACTIVE, codeOf, type LoadedApp, startLoadedApp } from '@cordis-subagents/test-support'

/** A TCP listener on 127.0.0.1 that accepts connections, reads what comes and never answers. */
async function silentDatabase(): Promise<{ server: Server; port: number; open: Set<Socket>; seen: () => number }> {
  const open = new Set<Socket>()
  let seen = 0
  const server = createServer((socket) => {
    seen++
    open.add(socket)
    socket.on('close', () => open.delete(socket))
    socket.on('error', () => {})
    socket.resume()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as { port: number }).port, open, seen: () => seen }
}

describe('serve-a2a: reloaded while it starts', function () {
  this.timeout(40_000)
  let app: LoadedApp | undefined
  let database: Awaited<ReturnType<typeof silentDatabase>> | undefined
  afterEach(async () => {
    await app?.stop()
    app = undefined
  })
  after(() => {
    for (const socket of database?.open ?? []) socket.destroy()
    database?.server.close()
  })

  it('the load after the edit keeps serving: the old start\'s clients are ended and its failure is not the live load\'s', async () => {
    database = await silentDatabase()
    const port = await freePort()
    app = await startLoadedApp(`- id: a2a
  name: '@cordis-subagents/serve-a2a'
  config:
    port: ${port}
`, A2A_APP)
    await eventually(() => app!.ctx.get('a2aServer')?.url, 'the server serving')
    // The user adds \`shared\` (the loader writes cordis.yml and reloads the entry): the start hangs in its connect.
    await app.loader.update('a2a', { config: { port, shared: { url: `postgres://user:pass@127.0.0.1:${database.port}/db` } } })
    await eventually(() => database!.seen() > 0, 'the start connecting to the silent database')
    expect(app.ctx.get('a2aServer')).to.equal(undefined)
    // The user edits the entry: `shared` removed (the loader writes cordis.yml and reloads the entry).
    await app.loader.update('a2a', { config: { port } })
    await eventually(() => app!.ctx.get('a2aServer')?.url, 'the edited entry serving')
    // Every start has settled (the old one too), and the old start's connections are closed.
    await app.ctx.lifecycle.flush()
    await eventually(() => database!.open.size === 0, 'the old start\'s PostgreSQL connections ended', 30_000)
    await app.ctx.lifecycle.flush()
    expect(app.errors.map((error) => `${String(codeOf(error))}: ${String(error)}`)).to.deep.equal([])
    expect(app.status('a2a')).to.equal(ACTIVE)
    expect(await accepts(port)).to.equal(true)
    expect(app.ctx.get('a2aServer')?.url).to.equal(`http://127.0.0.1:${port}`)
  })

  it('edited again while the last edit starts, the last edit serves on its port as ctx.a2aServer, and nothing fails', async () => {
    const port = await freePort()
    app = await startLoadedApp(`- id: a2a
  name: '@cordis-subagents/serve-a2a'
  config:
    port: ${port}
`, A2A_APP)
    await eventually(() => app!.ctx.get('a2aServer')?.url, 'the server serving')
    for (let turns = 0, maxFollowUps = 2; turns < 6; turns++) {
      const first = app.loader.update('a2a', { config: { port, maxFollowUpsPerTask: maxFollowUps++ } })
      for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
      await Promise.all([first, app.loader.update('a2a', { config: { port, maxFollowUpsPerTask: maxFollowUps++ } })])
      await app.ctx.lifecycle.flush()
      await eventually(() => app!.ctx.get('a2aServer')?.url, `served again after two edits ${turns} turns apart`)
      expect(app.errors.map((error) => `${String(codeOf(error))}: ${String(error)}`), `${turns} turns apart`).to.deep.equal([])
      expect(app.status('a2a')).to.equal(ACTIVE)
      expect(app.ctx.get('a2aServer')?.config.maxFollowUpsPerTask).to.equal(maxFollowUps - 1)
      expect(await accepts(port)).to.equal(true)
    }
  })
})
