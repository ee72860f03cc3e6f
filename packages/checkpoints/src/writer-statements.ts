import { RUN_COLUMNS as COLUMNS, TABLES } from './records.js'

// The statements of a batch, built where they run: in the writer thread (sqlite-writer.ts,
// postgres-writer.ts), from the texts the main thread encoded once (write-ops.ts `encodeOp`, the
// same text as in the run log). A group is one statement: an insert (`[0, given]`: the row is its
// given columns, the rest at their initial values; `createdAt` is `updatedAt` unless given, as a
// settle merged into it on the main thread gives it) followed by its late columns (`[2, columns]`)
// and the updates merged into it (`[1, id, guard, changes]`: their changes set on the row), or one
// update alone. Plain JavaScript in a string, since a worker thread runs it as is (from src/ and
// lib/ alike); `statementsOf` gives the same for a writer on the main thread (an in-memory SQLite).

export type Dialect = 'sqlite' | 'postgres'
export type Statement = [text: string, params: unknown[]]

/**
 * Source that defines `statementsOf(groups)` → `[text, params][]`. SQLite: booleans as 0/1, dates as
 * epoch ms (minato's encoding); PostgreSQL: dates as ISO text (timestamptz), `$n` parameters, `RETURNING 1`.
 */
export function statementsSource(dialect: Dialect): string {
  const pg = dialect === 'postgres'
  const quote = (name: string) => pg ? `"${name}"` : `\`${name}\``
  const insert = `INSERT INTO ${quote(TABLES.runs)} (${COLUMNS.map(quote).join(', ')}) `
    + `VALUES (${COLUMNS.map((_, i) => pg ? `$${i + 1}` : '?').join(', ')}) ON CONFLICT (${quote('id')}) DO NOTHING${pg ? ' RETURNING 1' : ''}`
  return `
const statementsOf = (() => {
  const COLUMNS = ${JSON.stringify(COLUMNS)}
  const KNOWN = new Set(COLUMNS)
  const DATES = new Set(['createdAt', 'updatedAt'])
  const INSERT = ${JSON.stringify(insert)}
  const PG = ${pg}
  const updates = new Map()
  const value = (key, v) => {
    if (v === undefined || v === null) return null
    if (DATES.has(key)) return PG ? new Date(v).toISOString() : v
    if (!PG && typeof v === 'boolean') return +v
    return v
  }
  const known = (changes) => {
    for (const key in changes) if (!KNOWN.has(key)) throw new Error('checkpoints: unknown run column ' + key)
  }
  const newRow = (g) => ({
    id: g.id, path: g.path, root: g.root, parent: g.parent ?? '', provider: g.provider, agent: g.agent ?? '', state: g.state,
    stopReason: g.stopReason ?? null, usage: g.usage ?? '{}', work: g.work ?? '{}', transcript: g.transcript ?? null, turn: g.turn ?? 0,
    result: g.result ?? null, background: g.background ?? false, label: g.label ?? '', delivery: g.delivery ?? '',
    sessionId: g.sessionId ?? null, taskId: g.taskId ?? null, agentUrl: g.agentUrl ?? null,
    host: g.host, instance: g.instance, createdAt: g.createdAt ?? g.updatedAt, updatedAt: g.updatedAt,
  })
  const update = (id, guard, changes) => {
    known(changes)
    const columns = COLUMNS.filter((key) => key !== 'id' && changes[key] !== undefined)
    const key = (guard ? 'g:' : 'u:') + columns.join(',')
    let text = updates.get(key)
    if (text === undefined) {
      text = PG
        ? 'UPDATE ${quote(TABLES.runs)} SET ' + columns.map((c, i) => '"' + c + '" = $' + (i + 2)).join(', ') + ' WHERE "id" = $1' + (guard ? ' AND "state" <> \\'settled\\'' : '') + ' RETURNING 1'
        : 'UPDATE ${quote(TABLES.runs)} SET ' + columns.map((c) => '\`' + c + '\` = ?').join(', ') + ' WHERE \`id\` = ?' + (guard ? ' AND \`state\` <> \\'settled\\'' : '')
      updates.set(key, text)
    }
    const values = columns.map((c) => value(c, changes[c]))
    return [text, PG ? [id, ...values] : [...values, id]]
  }
  return (groups) => groups.map((group) => {
    const first = group[0]
    if (first[0] === 1) return update(first[1], first[2] === 1, first[3])
    known(first[1])
    const row = newRow(first[1])
    for (let i = 1; i < group.length; i++) {
      const changes = group[i][0] === 2 ? group[i][1] : group[i][3]
      known(changes)
      for (const key in changes) if (changes[key] !== undefined) row[key] = changes[key]
    }
    return [INSERT, COLUMNS.map((c) => value(c, row[c]))]
  })
})()
`
}

/** `statementsSource`'s function, for a writer on the main thread. */
export function statementsOf(dialect: Dialect): (groups: unknown[][][]) => Statement[] {
  // The one source the writer threads run as is, made a function here.
  return new Function(`${statementsSource(dialect)}\nreturn statementsOf`)() as (groups: unknown[][][]) => Statement[]
}
