import { Logger } from 'cordis'

/** Every line logged (any level) from now until `stop()`, as `type content` (`warn AGENT_FILE_SYMLINK: …`). */
export function captureLogs(): { lines: string[]; stop(): void } {
  const lines: string[] = []
  const target = { colors: 0, levels: { base: 3 }, record: (record: Logger.Record) => void lines.push(`${record.type} ${record.content}`) }
  Logger.targets.push(target as unknown as Logger.Target)
  return {
    lines,
    stop() {
      const index = Logger.targets.indexOf(target as unknown as Logger.Target)
      if (index >= 0) Logger.targets.splice(index, 1)
    },
  }
}
