import { Schema } from 'cordis'
import { count, duration } from '@cordis-subagents/shared'

export interface Config {
  debounce: number
  settleTimeout: number
  maxBytes: number
  retryDelay: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  debounce: duration({ max: 60_000 }).default(200)
    .description('Milliseconds of quiet after the last change before the file is read (editors write in several steps).'),
  settleTimeout: duration({ min: 1, max: 600_000 }).default(10_000)
    .description('Milliseconds to wait for the changed entries to start before the reload is reported (`config-watch/checked`).'),
  maxBytes: count({ min: 1, max: 64 * 1024 * 1024 }).default(1024 * 1024)
    .description('A config file larger than this is not read (rejected with CONFIG_TOO_LARGE).'),
  retryDelay: duration({ min: 10, max: 600_000 }).default(1000)
    .description('Milliseconds before the watcher is armed again after it failed (a directory that went away, a watcher error).'),
})
