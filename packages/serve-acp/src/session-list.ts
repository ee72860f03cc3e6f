import type { SessionStore } from './session-store.js'

/** Sessions in one `session/list` page. */
const LIST_PAGE = 50

const CURSOR = /^page-(\d{1,9})$/

interface ListedSession {
  sessionId: string
  cwd: string
  updatedAt: string
}

export interface SessionPage {
  sessions: ListedSession[]
  nextCursor?: string
}

/**
 * `session/list`: the sessions open in this process and those in the store (one entry per id,
 * the newer time wins), most recently active first, optionally only those of `cwd`, `LIST_PAGE` at
 * a time. The cursor is the offset of the next page; a list that changes between pages may repeat
 * or skip an entry. Undefined when the cursor is not one this server gave.
 */
export async function listSessions(
  live: Iterable<{ id: string; cwd: string; updatedAt: number }>,
  store: SessionStore | undefined,
  params: { cwd?: string | null; cursor?: string | null },
): Promise<SessionPage | undefined> {
  let offset = 0
  if (params.cursor !== undefined && params.cursor !== null) {
    const match = CURSOR.exec(params.cursor)
    if (!match) return undefined
    offset = Number(match[1])
  }
  const byId = new Map<string, { id: string; cwd: string; updatedAt: number }>()
  for (const entry of store ? await store.list() : []) byId.set(entry.id, entry)
  for (const session of live) {
    const stored = byId.get(session.id)
    const { id, cwd, updatedAt } = session
    if (!stored || stored.updatedAt < updatedAt) byId.set(id, { id, cwd, updatedAt })
  }
  const wanted = typeof params.cwd === 'string' ? params.cwd : undefined
  const all = [...byId.values()]
    .filter((entry) => wanted === undefined || entry.cwd === wanted)
    .sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1))
  const page = all.slice(offset, offset + LIST_PAGE)
    .map((entry) => ({ sessionId: entry.id, cwd: entry.cwd, updatedAt: new Date(entry.updatedAt).toISOString() }))
  const next = offset + LIST_PAGE
  return next < all.length ? { sessions: page, nextCursor: `page-${next}` } : { sessions: page }
}
