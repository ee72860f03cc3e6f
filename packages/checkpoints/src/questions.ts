import { randomUUID } from 'node:crypto'
import { $ } from 'minato'
import { checkId, checkText } from './codec.js'
import { CheckpointError } from './errors.js'
import { MAX_PATH_LENGTH, type QuestionRecord, type QuestionRow, TABLES } from './records.js'
import { database, type StoreContext } from './store.js'

export interface Ask {
  runId: string
  path: string
  question: string
  /** Default: a fresh UUID. */
  id?: string
}

function toRecord(row: QuestionRow): QuestionRecord {
  const { answer, answeredAt, ...rest } = row
  return { ...rest, ...answer !== null ? { answer } : {}, ...answeredAt ? { answeredAt } : {} }
}

/** Questions a child asked its parent (or the user) and is parked on. */
export class Questions {
  /** Settles run one at a time: some drivers (SQLite) update by read-then-write. */
  private settling: Promise<unknown> = Promise.resolve()

  constructor(private readonly store: StoreContext) {}

  async ask(ask: Ask): Promise<QuestionRecord> {
    const { maxTextBytes, maxPendingQuestions } = this.store.limits
    const row: QuestionRow = {
      id: checkId('id', ask.id ?? randomUUID()),
      runId: checkId('runId', ask.runId),
      path: checkId('path', ask.path, MAX_PATH_LENGTH),
      question: checkText('question', ask.question, maxTextBytes),
      state: 'pending',
      answer: null,
      askedAt: new Date(),
      answeredAt: null,
    }
    const db = database(this.store)
    const pending = await db.eval(TABLES.questions, (q) => $.count(q.id), { state: 'pending' })
    if (pending >= maxPendingQuestions) {
      throw new CheckpointError('CHECKPOINT_LIMIT', `${pending} questions are pending, the limit (maxPendingQuestions); answer or cancel some first.`)
    }
    await db.create(TABLES.questions, row)
    return toRecord(row)
  }

  async get(id: string): Promise<QuestionRecord | undefined> {
    const [row] = await database(this.store).get(TABLES.questions, { id })
    return row && toRecord(row)
  }

  async pending(filter: { runId?: string } = {}): Promise<QuestionRecord[]> {
    const query = { state: 'pending' as const, ...filter.runId ? { runId: filter.runId } : {} }
    const rows = await database(this.store).get(TABLES.questions, query, { sort: { askedAt: 'asc' }, limit: this.store.limits.maxList })
    return rows.map(toRecord)
  }

  /** Records the answer; only a pending question takes one (one answer wins a race). */
  answer(id: string, answer: string): Promise<QuestionRecord> {
    return this.settle(id, 'answered', checkText('answer', answer, this.store.limits.maxTextBytes))
  }

  cancel(id: string): Promise<QuestionRecord> {
    return this.settle(id, 'cancelled', null)
  }

  private settle(id: string, state: 'answered' | 'cancelled', answer: string | null): Promise<QuestionRecord> {
    const next = this.settling.then(() => this.settleNow(id, state, answer))
    this.settling = next.catch(() => {})
    return next
  }

  private async settleNow(id: string, state: 'answered' | 'cancelled', answer: string | null): Promise<QuestionRecord> {
    const db = database(this.store)
    const result = await db.set(TABLES.questions, { id, state: 'pending' }, { state, answer, answeredAt: new Date() })
    const [row] = await db.get(TABLES.questions, { id })
    if (!row) throw new CheckpointError('CHECKPOINT_NOT_FOUND', `no question ${id} (it may have been swept).`)
    if (!result.matched) {
      throw new CheckpointError('QUESTION_NOT_PENDING', `question ${id} is already ${row.state}.`)
    }
    return toRecord(row)
  }
}
