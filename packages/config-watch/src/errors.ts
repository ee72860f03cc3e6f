import { CodedError } from '@cordis-subagents/shared'

/** Why the plugin itself cannot run (it fails its load with one of these). */
export type ConfigWatchErrorCode =
  /** `ctx.loader` is not `@cordisjs/loader` 0.13 (Koishi's loader, for one: use @koishijs/plugin-hmr there). */
  | 'CONFIG_WATCH_LOADER'

export class ConfigWatchError extends CodedError<ConfigWatchErrorCode> {
  override name = 'ConfigWatchError'
}

/** Why a save was not applied (the running configuration stays as it was). */
export type RejectCode =
  /** The file is gone, empty or cannot be read (between the steps of some saves, for a moment). */
  | 'CONFIG_UNREADABLE'
  /** Not a regular file (a FIFO, a device, a socket, a directory), or a symlink to one. */
  | 'CONFIG_NOT_A_FILE'
  /** Larger than `maxBytes`, or YAML aliases expand it to more than `maxBytes` values. */
  | 'CONFIG_TOO_LARGE'
  /** Not valid YAML (or JSON, for a .json file). */
  | 'CONFIG_SYNTAX'
  /** Not a list of entries, an entry without a `name`, or an `id` used twice. */
  | 'CONFIG_SHAPE'
  /** An enabled entry names a package the loader cannot import. */
  | 'CONFIG_ENTRY_IMPORT'
  /** An enabled entry's config fails its plugin's schema. */
  | 'CONFIG_ENTRY_SCHEMA'
