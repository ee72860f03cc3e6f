/**
 * Runs the writes of one key one after another within this process. Some minato drivers (SQLite's)
 * update by read-then-write, so two writes of one row in one process could interleave between the
 * read and the write; PostgreSQL's conditional UPDATE is atomic by itself, across processes too.
 * Holds an entry only while a write of that key is queued or running.
 */
export class KeyLocks {
  private readonly tails = new Map<string, Promise<unknown>>()

  /** True while a write of `key` is queued or running here. */
  busy(key: string): boolean {
    return this.tails.has(key)
  }

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    const next = previous.then(work, work)
    const tail = next.catch(() => {})
    this.tails.set(key, tail)
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return next
  }
}
