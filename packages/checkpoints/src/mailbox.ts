// The shared-memory mailbox between the main thread and a writer thread (writer-thread.ts): a header
// of Int32 fields, then a data area that holds one batch (UTF-8 JSON: its groups of encoded writes,
// see writer-statements.ts), and after the batch ran its results (one Int32 per group)
// or its error (UTF-8 JSON). The main thread owns the data area until it bumps `seq`; the thread owns
// it until it bumps `done`.

/** Bytes of the header (Int32 fields, see `Field`). */
export const MAILBOX_HEADER = 64
/** Bytes of the data area: a larger batch goes by message port (`Slot.Port`). */
export const MAILBOX_BYTES = 1 << 20

/** The header's fields (Int32 indices). */
export const Field = { seq: 0, done: 1, kind: 2, length: 3, status: 4 } as const

/** What the mailbox holds: a batch (in the data area, or on the port), a ping, or the close. */
export const Slot = { Batch: 0, Ping: 1, Close: 2, Port: 3 } as const
export type Slot = (typeof Slot)[keyof typeof Slot]

/**
 * The thread's side, prepended to each writer thread's CommonJS source: `mailbox.waitSync()` (a
 * thread that may block: SQLite's) or `await mailbox.wait()` (one with an event loop to run:
 * PostgreSQL's) for the next request, `mailbox.read()` for it, then `mailbox.done(results)` or
 * `mailbox.failed(error)`.
 */
export const MAILBOX = `
const mailbox = (() => {
  const { workerData, receiveMessageOnPort } = require('node:worker_threads')
  const head = new Int32Array(workerData.box, 0, ${MAILBOX_HEADER / 4})
  const bytes = Buffer.from(workerData.box, ${MAILBOX_HEADER})
  const ints = new Int32Array(workerData.box, ${MAILBOX_HEADER})
  let seen = 0
  const reply = (status, length) => {
    head[${Field.status}] = status
    head[${Field.length}] = length
    Atomics.store(head, ${Field.done}, seen)
    Atomics.notify(head, ${Field.done})
  }
  const failed = (error) => {
    const text = JSON.stringify({ message: String((error && error.message) || error).slice(0, 4096), code: error && typeof error.code === 'string' ? error.code : undefined })
    reply(1, bytes.write(text, 0))
  }
  return {
    waitSync() {
      while (Atomics.load(head, ${Field.seq}) === seen) Atomics.wait(head, ${Field.seq}, seen)
      seen = Atomics.load(head, ${Field.seq})
    },
    async wait() {
      while (Atomics.load(head, ${Field.seq}) === seen) {
        const waiting = Atomics.waitAsync(head, ${Field.seq}, seen)
        if (waiting.async) await waiting.value
      }
      seen = Atomics.load(head, ${Field.seq})
    },
    read() {
      const kind = head[${Field.kind}]
      if (kind === ${Slot.Close}) return { close: true, groups: [] }
      if (kind === ${Slot.Ping}) return { ping: true, groups: [] }
      const text = kind === ${Slot.Port} ? receiveMessageOnPort(workerData.port).message : bytes.toString('utf8', 0, head[${Field.length}])
      return { groups: JSON.parse(text) }
    },
    done(results) {
      if (results.length > ints.length) return failed(new Error('a batch of ' + results.length + ' statements is too many for the mailbox'))
      for (let i = 0; i < results.length; i++) ints[i] = results[i]
      reply(0, results.length)
    },
    failed,
  }
})()
`
