// serve-acp's session store: bounded in size and count, ids that can't escape the directory.
import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { DEFAULT_STORE_LIMITS, isSessionId, newSessionId, SessionStore } from '@cordis-subagents/serve-acp/testing'

const { maxBytes: MAX_SESSION_BYTES, maxSessions: MAX_SESSIONS } = DEFAULT_STORE_LIMITS

describe('serve-acp session store', () => {
  let dir: string
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'session-store-')) })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('round-trips a session; refuses ids that are not its own', async () => {
    const store = new SessionStore(dir)
    const id = newSessionId()
    expect(isSessionId(id)).to.equal(true)
    expect(await store.save(id, { cwd: '/tmp', messages: [{ role: 'user', content: 'hi' }] })).to.equal(true)
    expect(await store.load(id)).to.deep.equal({ cwd: '/tmp', messages: [{ role: 'user', content: 'hi' }] })
    expect(await store.load('../../etc/passwd')).to.equal(undefined)
    let refused: unknown
    try {
      await store.save('../escape', { cwd: '/', messages: [] })
    } catch (error) {
      refused = error
    }
    expect(refused).to.be.instanceOf(Error)
    expect(readdirSync(dir)).to.deep.equal([`${id}.json`])
  })

  it('does not store a session over the size cap, and keeps only the newest sessions', async () => {
    const store = new SessionStore(dir)
    const big = 'x'.repeat(MAX_SESSION_BYTES)
    expect(await store.save(newSessionId(), { cwd: '/', messages: [{ role: 'user', content: big }] })).to.equal(false)
    const ids: string[] = []
    for (let i = 0; i < MAX_SESSIONS + 5; i++) {
      const id = newSessionId()
      ids.push(id)
      await store.save(id, { cwd: '/', messages: [] })
      // mtime resolution can be coarse: make the order explicit.
      const when = new Date(Date.now() - (MAX_SESSIONS + 5 - i) * 1000)
      utimesSync(join(dir, `${id}.json`), when, when)
    }
    const kept = readdirSync(dir).filter((name) => name.endsWith('.json'))
    expect(kept).to.have.length(MAX_SESSIONS)
    expect(kept).to.not.include(`${ids[0]}.json`)
    expect(kept).to.include(`${ids.at(-1)}.json`)
  })

  it('honours its own limits', async () => {
    const store = new SessionStore(dir, { maxBytes: 2000, maxSessions: 2 })
    expect(await store.save(newSessionId(), { cwd: '/', messages: [{ role: 'user', content: 'x'.repeat(2000) }] })).to.equal(false)
    for (let i = 0; i < 3; i++) {
      const id = newSessionId()
      expect(await store.save(id, { cwd: '/', messages: [] })).to.equal(true)
      const when = new Date(Date.now() - (3 - i) * 1000)
      utimesSync(join(dir, `${id}.json`), when, when)
    }
    expect(readdirSync(dir).filter((name) => name.endsWith('.json'))).to.have.length(2)
  })
})
