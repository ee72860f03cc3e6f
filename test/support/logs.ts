import { Logger } from 'cordis'

export interface LogRecord {
  name: string
  type: string
  content: string
}

/**
 * Replaces every logger target with one that records (debug included) instead of printing.
 * `restore()` puts the previous targets back.
 */
export function captureLogs(): { records: LogRecord[]; restore(): void } {
  const records: LogRecord[] = []
  const saved = Logger.targets.splice(0, Logger.targets.length, {
    levels: { base: 3 },
    record(record) {
      records.push({ name: record.name, type: record.type, content: record.content })
    },
  })
  return { records, restore: () => { Logger.targets.splice(0, Logger.targets.length, ...saved) } }
}
