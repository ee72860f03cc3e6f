import { type FSWatcher, readdirSync, readFileSync, statSync, watch } from 'node:fs'
import { join } from 'node:path'
import { DefinitionError } from '../errors.js'
import type { AgentDefinition } from '../types.js'
import { type ClaudeMapping, MAX_AGENT_FILE_BYTES, parseAgentFile } from './parse.js'

/** Most agent files one directory may hold. */
const MAX_AGENT_FILES = 200

/** Every `*.md` file of `dir` (not recursive, sorted) as definitions; any bad file fails them all. */
export function readAgentDirectory(dir: string, mapping: ClaudeMapping, baseDir: string): AgentDefinition[] {
  let names: string[]
  try {
    names = readdirSync(dir).filter((name) => name.toLowerCase().endsWith('.md')).sort()
  } catch (error) {
    throw new DefinitionError('AGENT_FILE', `${dir}: the agents directory cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`)
  }
  if (names.length > MAX_AGENT_FILES) throw new DefinitionError('AGENT_FILE', `${dir}: ${names.length} agent files; at most ${MAX_AGENT_FILES} are read.`)
  const definitions: AgentDefinition[] = []
  for (const name of names) {
    const file = join(dir, name)
    let text: string
    try {
      const stat = statSync(file)
      if (!stat.isFile()) continue
      if (stat.size > MAX_AGENT_FILE_BYTES) throw new DefinitionError('AGENT_FILE', `${file}: ${stat.size} bytes; an agent file is at most ${MAX_AGENT_FILE_BYTES}.`)
      text = readFileSync(file, 'utf8')
    } catch (error) {
      if (error instanceof DefinitionError) throw error
      // Gone between the listing and the read (a rename-save in progress): the next event reads it again.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw new DefinitionError('AGENT_FILE', `${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`)
    }
    definitions.push(parseAgentFile(file, text, mapping, baseDir))
  }
  return definitions
}

/**
 * Calls `onChange` once things are quiet (`debounce` ms) after a file of `dir` was written, added,
 * removed or renamed. The directory is watched, not each file: editors save by writing a temporary
 * file and renaming it over the old one, and a watch on the old file would miss every later save.
 */
export function watchDirectory(dir: string, debounce: number, onChange: () => void, onError: (error: unknown) => void): () => void {
  let quiet: NodeJS.Timeout | undefined
  let closed = false
  let watcher: FSWatcher | undefined
  try {
    // Not persistent: the watcher never keeps a process alive by itself (a CLI app ends when its work does).
    watcher = watch(dir, { persistent: false }, () => {
      if (closed) return
      clearTimeout(quiet)
      quiet = setTimeout(() => { if (!closed) onChange() }, debounce)
    })
    watcher.on('error', onError)
  } catch (error) {
    onError(error)
  }
  return () => {
    closed = true
    clearTimeout(quiet)
    watcher?.close()
  }
}
