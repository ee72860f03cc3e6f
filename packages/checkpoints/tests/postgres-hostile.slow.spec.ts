// Issue 39 item 5: hostile ids and JSON on a PostgreSQL server whose database defaults to
// standard_conforming_strings = off (backslashes escape inside '...'), through the real store and driver.
// A real NUL goes only into JSON (escaped there): PostgreSQL text cannot hold U+0000 at all.
import { expect } from 'chai'
import postgres from 'postgres'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { freshPostgres, PG_URL, startStore, type StoreApp } from './support.js'

/** Sets (or resets) the test database's default for new sessions; the store's pool opens after it. */
async function databaseDefault(value: 'off' | null): Promise<string> {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} })
  try {
    const [{ db }] = await sql`SELECT current_database() AS db`
    const name = '"' + (db as string).replace(/"/g, '""') + '"'
    await sql.unsafe(value ? `ALTER DATABASE ${name} SET standard_conforming_strings = ${value}`
      : `ALTER DATABASE ${name} RESET standard_conforming_strings`)
    const fresh = postgres(PG_URL, { max: 1, onnotice: () => {} })
    try {
      const [{ standard_conforming_strings: now }] = await fresh`SHOW standard_conforming_strings`
      return now as string
    } finally {
      await fresh.end({ timeout: 1 })
    }
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Every SQL text the store's driver sends, to show that no value is spliced into one. */
function recordStatements(app: StoreApp): string[] {
  const driver = Object.values(app.ctx.database.drivers)[0] as PostgresDriver
  const texts: string[] = []
  const query = driver.query.bind(driver)
  driver.query = ((text: string, params?: unknown[]) => {
    texts.push(text)
    return query(text, params)
  }) as typeof driver.query
  return texts
}

const INJECTIONS = [`x\\' OR true --`, `x' OR true --`, `\\'; DELETE FROM subagent_run; --`, `a\\`, `\\\\'`]
const ROW = { provider: 'spawn', state: 'running' } as const
const STRINGS = [
  'back\\slash \\n \\u0000 \\x00 \\\\', `it's "quoted" \\"`, 'nul-adjacent \u0001\u001f\u007f \\0 \\\\0',
  'ünïcødé ☃ 🧪 \u2028\u2029 \u202e rtl', '$1 $$ ? %s :name', '\'\'); DROP TABLE subagent_run; --',
]

describe('checkpoints on PostgreSQL with standard_conforming_strings = off (issue 39, item 5)', function () {
  let app: StoreApp | undefined

  before(async () => {
    expect(await databaseDefault('off'), 'the database default took').to.equal('off')
  })

  after(async () => {
    await databaseDefault(null)
  })

  beforeEach(async () => {
    await freshPostgres()
  })

  afterEach(async () => {
    await app?.stop()
    app = undefined
  })

  it('a hostile id loads, lists and removes only itself, never another run', async () => {
    app = await startStore({ kind: 'postgres' })
    const { checkpoints } = app
    await checkpoints.save({ ...ROW, id: 'alice', path: 'alice', label: 'alice secret' })
    await checkpoints.save({ ...ROW, id: 'bob', path: 'bob' })
    for (const id of INJECTIONS) {
      expect(await checkpoints.load(id), id).to.equal(undefined)
      expect(await checkpoints.list({ parent: id }), id).to.deep.equal([])
      expect(await checkpoints.list({ root: id }), id).to.deep.equal([])
      expect(await checkpoints.remove(id), id).to.equal(false)
    }
    expect((await checkpoints.list()).map((run) => run.id).sort()).to.deep.equal(['alice', 'bob'])
    for (const id of INJECTIONS) await checkpoints.save({ ...ROW, id, path: id, label: id })
    for (const id of INJECTIONS) expect(await checkpoints.load(id), id).to.include({ id, path: id, label: id, root: id })
    expect(await checkpoints.load('alice')).to.include({ label: 'alice secret' })
    expect(await checkpoints.remove(INJECTIONS[0])).to.equal(true)
    expect(await checkpoints.list({ limit: 100 })).to.have.length(INJECTIONS.length - 1 + 2)
  })

  it('stores JSON and text with backslashes, quotes, NUL-adjacent and unicode characters and reads them back exactly', async () => {
    app = await startStore({ kind: 'postgres' })
    const { checkpoints } = app
    const transcript = [...STRINGS.map((content) => ({ role: 'user', content })), { role: 'tool', content: 'real NUL \u0000 in JSON' }]
    // usage and work are counts keyed by name: hostile keys.
    const usage = { [STRINGS[0]]: 1, inputTokens: 2 }
    await checkpoints.save({ ...ROW, id: 'r1', path: 'r1', transcript, usage, result: STRINGS.join('|') })
    await checkpoints.save({ id: 'r1', work: { toolCalls: 1, [STRINGS[1]]: 3 } })
    const record = (await checkpoints.load('r1'))!
    expect(record.transcript).to.deep.equal(transcript)
    expect(record.usage).to.deep.equal(usage)
    expect(record.work).to.deep.equal({ toolCalls: 1, [STRINGS[1]]: 3 })
    expect(record.result).to.equal(STRINGS.join('|'))
    const asked = await checkpoints.questions.ask({ runId: 'r1', path: 'r1', question: STRINGS[3] })
    await checkpoints.questions.answer(asked.id, STRINGS[0])
    expect(await checkpoints.questions.get(asked.id)).to.include({ question: STRINGS[3], answer: STRINGS[0] })
  })

  it('sends every value as a bind parameter (no value in any SQL text) and pins standard_conforming_strings on', async () => {
    app = await startStore({ kind: 'postgres' })
    const texts = recordStatements(app)
    const marker = 'm4rk3r'
    const { checkpoints } = app
    await checkpoints.save({ ...ROW, id: `${marker}-id`, path: `${marker}-id`, label: `${marker}-label`, transcript: [`${marker}-json`] })
    await checkpoints.transition(`${marker}-id`, 'running', { state: 'parked', result: `${marker}-result` })
    await checkpoints.list({ parent: `${marker}-parent`, state: ['parked'] })
    await checkpoints.tasks.claim({ parent: `${marker}-p`, provider: 'spawn', agent: 'a', prompt: `${marker}-prompt` }, `${marker}-run`)
    await checkpoints.remove(`${marker}-id`)
    expect(texts.length).to.be.greaterThan(5)
    expect(texts.filter((text) => text.includes(marker))).to.deep.equal([])
    const driver = Object.values(app.ctx.database.drivers)[0] as PostgresDriver
    const [{ standard_conforming_strings: pinned }] = await driver.sql`SHOW standard_conforming_strings`
    expect(pinned).to.equal('on')
  })
})
