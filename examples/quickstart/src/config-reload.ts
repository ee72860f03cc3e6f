// Hot reload of the quick start's cordis.yml: a watcher that survives rename-saves, and a
// reload that validates the new file before the running app sees it.
import { type FSWatcher, readFileSync, watch } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import type { Context } from 'cordis'
import type Loader from '@cordisjs/loader'
import { settle } from './app.js'

export interface ConfigWatcher {
  close(): void
}

/**
 * Calls `onChange` (debounced) after `file` is written or replaced. It watches the directory,
 * not the file: a rename-save (`sed -i`, most editors' safe write) puts a new inode under the
 * name, and a watch on the file would keep following the old one. A watcher error re-arms it.
 * Events that leave the content as it was (touch, an editor's backup dance) are ignored.
 */
export function watchConfig(file: string, onChange: () => void, options: { debounce?: number } = {}): ConfigWatcher {
  const debounce = options.debounce ?? 150
  const dir = dirname(file)
  const name = basename(file)
  let last = readOrUndefined(file)
  let timer: NodeJS.Timeout | undefined
  let rearm: NodeJS.Timeout | undefined
  let watcher: FSWatcher | undefined
  let closed = false

  const check = async () => {
    const text = await readFile(file, 'utf8').catch(() => undefined)
    // Missing for a moment (between unlink and rename) or unchanged: nothing to reload.
    if (closed || text === undefined || text === last) return
    last = text
    onChange()
  }
  const arm = () => {
    if (closed) return
    try {
      watcher = watch(dir, (_event, changed) => {
        if (changed && changed !== name) return
        clearTimeout(timer)
        timer = setTimeout(() => void check(), debounce)
      })
      watcher.on('error', () => {
        watcher?.close()
        rearm = setTimeout(arm, debounce)
      })
    } catch {
      rearm = setTimeout(arm, 1000)
    }
  }
  arm()
  return {
    close() {
      closed = true
      clearTimeout(timer)
      clearTimeout(rearm)
      watcher?.close()
    },
  }
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

export type ReloadResult = { ok: true } | { ok: false; kept: boolean; reason: string }

/**
 * Reads the config file again and applies it, unless it is unusable: unparsable YAML, not a
 * list of entries, or an entry whose config fails its (already loaded) plugin's schema. Then
 * nothing changes and the previous configuration stays in force (`kept: true`). Errors raised
 * while the new config is applied (a plugin's own checks in `apply`) are reported with
 * `kept: false`: that entry failed and the others run with the new config.
 */
export async function reloadConfig(ctx: Context, loader: Loader): Promise<ReloadResult> {
  let data: unknown
  try {
    data = await loader.file.read()
  } catch (error) {
    return { ok: false, kept: true, reason: firstLine(error) }
  }
  if (!Array.isArray(data) || !data.every((item) => item && typeof item === 'object' && typeof item.name === 'string')) {
    return { ok: false, kept: true, reason: 'the file must be a YAML list of entries, each with a "name"' }
  }
  for (const options of data as Array<{ id?: string; name: string; config?: unknown; disabled?: boolean }>) {
    if (options.disabled || !options.id) continue
    const entry = [...loader.entries()].find((candidate) => candidate.options.id === options.id)
    if (!entry?.fork || entry.options.name !== options.name) continue
    const plugin = entry.fork.runtime.plugin as { Config?: unknown; schema?: unknown } | undefined
    const schema = plugin?.Config ?? plugin?.schema
    if (typeof schema !== 'function') continue
    try {
      schema(interpolate(entry, options.config))
    } catch (error) {
      return { ok: false, kept: true, reason: `entry "${options.id}" (${options.name}): ${firstLine(error)}` }
    }
  }
  const errors: unknown[] = []
  const stop = ctx.on('internal/error', (error: unknown) => void errors.push(error), true)
  try {
    loader.root.update(data as never)
    await settle(ctx)
  } finally {
    stop()
  }
  if (errors.length) return { ok: false, kept: false, reason: firstLine(errors[0]) }
  return { ok: true }
}

/** The loader's `!!js` expressions, evaluated the way the loader does (in the entry's context). */
function interpolate(entry: { evaluate(expr: string): unknown }, value: unknown): unknown {
  if (value && typeof value === 'object' && '__jsExpr' in value) return entry.evaluate(String((value as { __jsExpr: unknown }).__jsExpr))
  if (Array.isArray(value)) return value.map((item) => interpolate(entry, item))
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(entry, item)]))
  }
  return value
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error)
  const line = text.split('\n')[0]!.trim()
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}
