// What this package uses of @cordisjs/loader 0.13, typed structurally: the loader's own classes
// are generic over @cordisjs/core's Context, and a guard here says clearly when `ctx.loader` is
// something else (Koishi's loader).
import { ConfigWatchError } from './errors.js'

export interface EntryOptions {
  id?: string
  name: string
  config?: unknown
  disabled?: boolean | null
  group?: boolean | null
  [key: string]: unknown
}

interface LoaderEntry {
  options: EntryOptions
  readonly disabled: boolean
  fork?: { runtime: { plugin: unknown } }
  ctx: object
  evaluate(expr: string): unknown
  refresh(): Promise<void>
  _check(): boolean
}

export interface LoaderFileView {
  name: string
  /** A MIME type for files the loader can write back (YAML, JSON); unset for a JS module. */
  type?: string
  trees: Array<{ root: { data: EntryOptions[] } }>
  writeTask?: NodeJS.Timeout
  read(): Promise<unknown>
}

export interface LoaderView {
  ctx: object
  /** Set once the loader has started (its `init` found the file). */
  file?: LoaderFileView
  files: Record<string, LoaderFileView>
  root: { data: EntryOptions[]; update(data: EntryOptions[]): void }
  store: Record<string, LoaderEntry>
  entries(): Iterable<LoaderEntry>
  import(name: string): Promise<unknown>
  unwrapExports(exports: unknown): unknown
  refresh(): Promise<void>
}

/** Whether `value` is a @cordisjs/loader 0.13 loader (an entry tree with `refresh`). */
export function isCordisLoader(value: unknown): value is LoaderView {
  const loader = value as Partial<LoaderView> | undefined
  return !!loader && typeof loader.refresh === 'function' && typeof loader.entries === 'function'
    && !!loader.root && typeof loader.root.update === 'function' && typeof loader.import === 'function'
}

/** `ctx.loader` as a @cordisjs/loader, or a CONFIG_WATCH_LOADER error that says what to use instead. */
export function cordisLoader(value: unknown): LoaderView {
  if (isCordisLoader(value)) return value
  const koishi = !!value && typeof (value as { readConfig?: unknown }).readConfig === 'function'
  throw new ConfigWatchError('CONFIG_WATCH_LOADER', koishi
    ? 'ctx.loader is Koishi\'s loader (@koishijs/loader), which this plugin does not drive. Koishi reloads koishi.yml itself with @koishijs/plugin-hmr: load that instead.'
    : 'ctx.loader is not @cordisjs/loader 0.13 (no entry tree with refresh()). Start the app with `ctx.plugin(Loader, { filename })` from @cordisjs/loader.')
}
