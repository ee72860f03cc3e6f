// One look at the config file: read it, decide whether it changed and whether it is usable, and
// hand it to the loader, which reloads only the entries whose options changed.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Context } from 'cordis'
import type { RejectCode } from './errors.js'
import { exceedsValues } from './expanded-size.js'
import type { EntryOptions, LoaderView } from './loader-view.js'
import { parseConfigText, readConfigText } from './read.js'
import { checkEntries, checkShape, oneLine } from './validate.js'

export type CheckResult =
  /** The file says what is running already: a touch, a reformat, the loader's own write-back. */
  | { status: 'unchanged'; file: string }
  /** Not applied; the running configuration is kept. */
  | { status: 'rejected'; file: string; code: RejectCode; reason: string; line?: number }
  /** Handed to the loader. `errors` are what plugins reported while the changed entries started. */
  | { status: 'applied'; file: string; changed: string[]; errors: string[] }

export interface Reloading {
  file: string
  /** Ids of the entries added, removed or changed (`(no id: name)` for an entry without an id). */
  changed: string[]
}

export interface ReloaderOptions {
  maxBytes: number
  settleTimeout: number
  /** Called before the loader applies a changed, valid file. */
  onReloading(info: Reloading): void
  /** Entries without an id (the loader restarts them at every reload). */
  onWithoutId(names: string[]): void
}

export class Reloader {
  /** The text of the last file looked at: the same text again is not read twice. */
  private lastText: string | undefined

  constructor(
    private readonly ctx: Context,
    private readonly loader: LoaderView,
    private readonly file: string,
    private readonly options: ReloaderOptions,
    private readonly signal: AbortSignal,
  ) {}

  async check(): Promise<CheckResult> {
    const { file } = this
    let text: string
    try {
      const read = await readConfigText(file, this.options.maxBytes)
      if ('code' in read) {
        this.lastText = undefined
        return this.reject(read.code, read.reason)
      }
      text = read.text
    } catch (error) {
      this.lastText = undefined
      return this.reject('CONFIG_UNREADABLE', oneLine(error))
    }
    // An in-place write seen between its truncate and its write; the write's own event follows.
    // (An app with no entries at all is not a config the loader can run either.)
    if (!text.trim()) return this.reject('CONFIG_UNREADABLE', 'the file is empty (a save in progress?)')
    if (text === this.lastText) return { status: 'unchanged', file }
    this.lastText = text

    let data: unknown
    try {
      // The text read above, not the file again: a second read could see another (unbounded) file.
      const loaderFile = this.loader.file!
      data = await parseConfigText(text, loaderFile.type, () => loaderFile.read())
    } catch (error) {
      // A JS module config that could not be imported (gone, unreadable).
      if (typeof (error as NodeJS.ErrnoException).code === 'string') {
        this.lastText = undefined
        return this.reject('CONFIG_UNREADABLE', oneLine(error))
      }
      const mark = (error as { mark?: { line?: number; column?: number } }).mark
      const reason = (error as { reason?: unknown }).reason
      return this.reject('CONFIG_SYNTAX', typeof reason === 'string' ? `${oneLine(reason)}${mark?.column !== undefined ? ` (column ${mark.column + 1})` : ''}` : oneLine(error),
        typeof mark?.line === 'number' ? mark.line + 1 : undefined)
    }
    // Aliases expand without bound (an 858-byte file can stand for 10^8 values); copying or comparing
    // such data would stall the app, so past as many values as the file may have bytes it is refused.
    if (exceedsValues(data, this.options.maxBytes)) {
      return this.reject('CONFIG_TOO_LARGE', `YAML aliases expand it to more than ${this.options.maxBytes} values (maxBytes); use fewer aliases`)
    }
    const shape = checkShape(data, text)
    if ('code' in shape) return { status: 'rejected', file, ...shape }
    const running = this.loader.root.data
    if (deepEqual(shape.entries, running)) return { status: 'unchanged', file }
    const problem = await checkEntries(this.loader, shape.entries, text)
    if (problem) return { status: 'rejected', file, ...problem }
    if (this.signal.aborted) return { status: 'unchanged', file }

    const changed = changedEntries(running, shape.entries)
    if (shape.withoutId.length) this.options.onWithoutId(shape.withoutId)
    this.options.onReloading({ file, changed })
    const errors: string[] = []
    const stop = this.ctx.on('internal/error', (error: unknown) => void errors.push(oneLine(error)), true)
    try {
      // The loader's reload path (what `loader.refresh()` does after reading the file), given the
      // data checked above: reading the file once more could apply a newer, unchecked save.
      try {
        this.loader.root.update(shape.entries)
      } catch (error) {
        errors.push(oneLine(error))
      }
      await this.settle(new Set(changed))
    } finally {
      stop()
    }
    return { status: 'applied', file, changed, errors }
  }

  private reject(code: RejectCode, reason: string, line?: number): CheckResult {
    return { status: 'rejected', file: this.file, code, reason, ...(line ? { line } : {}) }
  }

  /** Until every changed entry that can start has started, or `settleTimeout` passed (in-process time, whatever the wall clock does). */
  private async settle(changed: Set<string>) {
    const deadline = performance.now() + this.options.settleTimeout
    const { lifecycle } = this.ctx
    // One timer for the whole wait, not one per round: a round whose flush ends first would leave its timer and its
    // listener on the plugin's signal behind (a round every 20 ms: hundreds by the bound).
    const done = new AbortController()
    const stop = () => done.abort()
    this.signal.addEventListener('abort', stop, { once: true })
    const timeUp = sleep(this.options.settleTimeout, undefined, { signal: done.signal }).catch(() => {})
    try {
      while (!done.signal.aborted) {
        const left = deadline - performance.now()
        if (left <= 0) return
        await Promise.race([lifecycle.flush(), timeUp])
        const pending = [...this.loader.entries()].filter((entry) => changed.has(entry.options.id ?? '') && !entry.fork && !entry.disabled && entry._check())
        if (!pending.length) return
        await sleep(Math.min(20, left), undefined, { signal: done.signal }).catch(() => {})
      }
    } finally {
      done.abort()
      this.signal.removeEventListener('abort', stop)
    }
  }
}

function changedEntries(before: EntryOptions[], after: EntryOptions[]): string[] {
  const key = (options: EntryOptions) => options.id ?? `(no id: ${options.name})`
  const old = new Map(before.map((options) => [key(options), options]))
  const now = new Map(after.map((options) => [key(options), options]))
  const changed: string[] = []
  for (const [id, options] of now) if (!deepEqual(old.get(id), options)) changed.push(id)
  for (const id of old.keys()) if (!now.has(id)) changed.push(id)
  return changed
}

/** Structural equality of parsed config (plain objects, arrays, scalars); key order does not matter. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const list = b as unknown[]
    return a.length === list.length && a.every((item, index) => deepEqual(item, list[index]))
  }
  const left = Object.entries(a).filter(([, value]) => value !== undefined)
  const right = b as Record<string, unknown>
  if (left.length !== Object.values(right).filter((value) => value !== undefined).length) return false
  return left.every(([key, value]) => deepEqual(value, right[key]))
}
