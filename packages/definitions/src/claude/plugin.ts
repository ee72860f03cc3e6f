import { resolve } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { Context, Schema } from 'cordis'
import { duration } from '@cordis-subagents/shared'
import type { AgentDefinition } from '../types.js'
import { AgentDirectory } from './directory.js'
import type { ClaudeMapping } from './parse.js'
import { watchDirectory } from './watch.js'

export const name = 'agent-definitions-claude'
export const reusable = true
export const inject = ['agentDefinitions']

export interface Config extends ClaudeMapping {
  dir: string
  watch: boolean
  debounce: number
  retryDelay: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  dir: Schema.string().default('.claude/agents').description('The directory of Claude Code agent files (`*.md`), relative to the config file\'s folder.'),
  provider: Schema.string().default('spawn').description('The subagents provider its agents run on.'),
  tools: Schema.dict(String).default({}).description('Claude Code tool names to this app\'s tool names (e.g. `Read: read_file`); a name not listed is kept as written.'),
  models: Schema.dict(String).default({}).description('Claude Code model aliases to this app\'s model refs (e.g. `sonnet: openai:gpt-4.1`); `inherit` and aliases not listed keep the parent\'s model.'),
  watch: Schema.boolean().default(true).description('Reload the agents when a file of the directory is saved, added, renamed or removed.'),
  debounce: duration({ min: 1 }).default(200).description('Quiet time after the last change before the directory is read again (ms).'),
  retryDelay: duration({ min: 10 }).default(1000)
    .description('How often a directory that is gone is looked for, and the wait before watching again after the watcher failed (ms).'),
})

/**
 * Registers the directory's agents. A bad file fails the entry at load with its code; on a later
 * save the directory is read again and, when every file is good, its agents are replaced together;
 * when one is bad, the error is logged (with its code) and the agents defined before stay. Only the
 * files that changed are parsed again, and a read that gives the same agents redefines nothing.
 *
 * The reads are asynchronous: the entry is loading (and the loader's start waits) until the first read
 * has defined every agent, all together. The watch is armed before it, so a save made meanwhile is
 * read after it; one read runs at a time, and changes seen during one are read once more after it.
 */
export async function apply(ctx: Context, config: Config) {
  const logger = ctx.logger('agent-definitions')
  const baseDir = ctx.baseDir ?? process.cwd()
  const dir = resolve(baseDir, config.dir)
  const warn = (code: string, message: string) => logger.warn('%s: %s', code, message)
  const directory = new AgentDirectory(dir, config, baseDir, { warn })
  // Unloaded, or applied again (a config edit): this apply is over, and a read still running defines nothing.
  let over = false
  ctx.on('dispose', () => { over = true })
  let current: AgentDefinition[] = []
  let undefine = () => {}
  const reload = async () => {
    try {
      const definitions = await directory.read()
      if (over) return
      // An unchanged set is not undefined and defined again (each would tell every team tool to re-derive).
      if (isDeepStrictEqual(definitions, current)) return void logger.debug('agents of %s unchanged; nothing redefined', dir)
      undefine()
      try {
        undefine = ctx.agentDefinitions.define(definitions)
      } catch (error) {
        // The new set does not fit (a name another entry has, a member gone): the old set comes back.
        undefine = ctx.agentDefinitions.define(current)
        throw error
      }
      current = definitions
      logger.info('reloaded %d agent file(s) from %s', definitions.length, dir)
    } catch (error) {
      if (over) return
      const code = (error as { code?: unknown }).code
      logger.warn('agents of %s not reloaded, the earlier ones stay: %s%s', dir, typeof code === 'string' ? `${code}: ` : '', (error as Error).message)
    }
  }
  // A read runs (the first one until it has defined its agents); `again`: a change was seen since it started.
  let reading = true
  let again = false
  const drain = async () => {
    while (again && !over) {
      again = false
      await reload()
    }
    reading = false
  }
  const onChange = () => {
    again = true
    if (reading) return
    reading = true
    void drain()
  }
  if (config.watch) ctx.effect(() => watchDirectory(dir, { debounce: config.debounce, retryDelay: config.retryDelay, onChange, warn }))
  current = await directory.read()
  if (over) return
  undefine = ctx.agentDefinitions.define(current)
  void drain()
}
