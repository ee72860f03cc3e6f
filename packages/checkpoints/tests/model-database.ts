// A model of the run table for the group commit's tests: a map of rows behind a `DirectWriter` that applies each
// batch's statement texts as the real statements do (an insert of an existing id matches 0 and changes nothing; a guarded
// update skips a settled row), with batches failing as told (before they write anything, or after a part of them).
import type { DirectWriter } from '../src/write-ops.js'

type Row = Record<string, unknown>
/** What a batch meets: written whole, or failing after this many of its statements (0: before any). */
export type Fault = { fail: false } | { fail: true; after: number }

/** The rows, and a writer that applies statement texts to them as the SQL would (an insert of an existing id matches 0). */
export function modelDatabase(faults: Fault[]) {
  const rows = new Map<string, Row>()
  const apply = (group: string[]): number => {
    let matched = 0
    let id: string | undefined
    for (const [index, text] of group.entries()) {
      const parsed = JSON.parse(text) as [0, Row] | [1, string, 0 | 1, Row] | [2, Row]
      if (parsed[0] === 0) {
        id = parsed[1].id as string
        if (rows.has(id)) return 0
        rows.set(id, { ...parsed[1] })
        matched = 1
      } else if (parsed[0] === 2) {
        Object.assign(rows.get(id!)!, parsed[1])
      } else {
        const row = rows.get(parsed[1])
        const moved = row !== undefined && (!parsed[2] || row.state !== 'settled')
        if (moved) Object.assign(row, parsed[3])
        if (index === 0) matched = moved ? 1 : 0
      }
    }
    return matched
  }
  const writer: DirectWriter = {
    kind: 'postgres',
    async run(groups) {
      await new Promise((resolve) => setImmediate(resolve))
      const fault = faults.shift() ?? { fail: false }
      const results: number[] = []
      for (const [index, group] of groups.entries()) {
        if (fault.fail && index >= fault.after) throw new Error('injected: the connection dropped')
        results.push(apply(group))
      }
      if (fault.fail) throw new Error('injected: the connection dropped after the batch ran')
      return results
    },
    async close() {},
  }
  return { rows, writer }
}
