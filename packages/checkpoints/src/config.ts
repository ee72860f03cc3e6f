import { hostname } from 'node:os'
import { Schema } from 'cordis'
import { count, duration } from '@cordis-subagents/shared'

export interface Config {
  /** This host's stable name: at start, its `running` runs left by an earlier start become `interrupted`. */
  host?: string
  /** Longest transcript of a run's last completed turn (bytes of its JSON). */
  maxTranscriptBytes?: number
  /** Longest result text or question/answer text (bytes). */
  maxTextBytes?: number
  /** Most runs kept (every state); past it the oldest ended runs are swept with their questions, then saves of new runs fail. */
  maxRuns?: number
  /** Most pending questions at once. */
  maxPendingQuestions?: number
  /** Ended runs (with their questions), answered questions and task keys older than this are swept (ms). */
  retention?: number
  /** How often the retention sweep runs (ms); it also runs at start. */
  sweepInterval?: number
  /** Most records one `list` returns. */
  maxList?: number
  /** The run log's file ('' beside a SQLite file, none on PostgreSQL; 'off' for none; else a path). */
  runLog?: string
}

const KIB = 1024
const MIB = 1024 * KIB
const DAY = 24 * 3600_000

export const Config: Schema<Config> = Schema.object({
  host: Schema.string().pattern(/^\S{1,255}$/).default(hostname() || 'host').description('This host\'s stable name (default: the machine\'s hostname). Hosts sharing one database need distinct names: at start, a host marks only its own `running` runs `interrupted`.'),
  maxTranscriptBytes: count({ min: 1, max: 64 * MIB }).default(4 * MIB).description('Longest transcript of a run\'s last completed turn (bytes of its JSON).'),
  maxTextBytes: count({ min: 1, max: 16 * MIB }).default(256 * KIB).description('Longest result, question or answer text (bytes).'),
  maxRuns: count({ min: 1, max: 10_000_000 }).default(10_000).description('Most runs kept; past it the oldest ended runs are swept, then new runs are refused (CHECKPOINT_LIMIT).'),
  maxPendingQuestions: count({ min: 1, max: 1_000_000 }).default(1000).description('Most pending questions at once.'),
  retention: count({ min: 60_000, max: 3650 * DAY }).default(7 * DAY).description('Ended runs (with their questions), answered questions and task keys older than this are swept (ms).'),
  sweepInterval: duration({ min: 1000 }).default(3600_000).description('How often the retention sweep runs (ms); it also runs at start.'),
  maxList: count({ min: 1, max: 100_000 }).default(1000).description('Most records one list call returns.'),
  runLog: Schema.string().default('').description('The run log, a local file that keeps a settled record from a SIGKILL until the database has it: \'\' beside a SQLite file (none on PostgreSQL), \'off\' for none, or a path (one per host process).'),
})

export type Limits = Required<Config>
