import { Schema } from 'cordis'
import { choice, count, duration, unsetGroup } from '@cordis-subagents/shared'
import type { EnvInherit } from './env.js'

/** One load = one MCP server. Exactly one of `command` (stdio) and `url` (Streamable HTTP). */
export interface Config {
  name: string
  command?: string
  args?: string[]
  cwd?: string
  env?: Record<string, string | boolean>
  inherit?: EnvInherit
  envExclude?: string[]
  url?: string
  headers?: Record<string, string>
  allow?: string[]
  deny?: string[]
  startupTimeout?: number
  callTimeout?: number
  killGrace?: number
  maxTools?: number
  relistInterval?: number
  maxMessageBytes?: number
  maxContentParts?: number
  maxPartChars?: number
  maxImages?: number
  maxImageBytes?: number
}

export const Config: Schema<Config> = Schema.object({
  name: Schema.string().pattern(/^[A-Za-z0-9-]{1,32}$/).required()
    .description('Server name: the prefix of its tools (`name__tool`). 1-32 of A-Z a-z 0-9 -.'),
  command: Schema.string()
    .description('Stdio server: the executable (e.g. `npx`, `node`), run without a shell in its own process group.'),
  args: Schema.array(String).default([])
    .description('Stdio server: arguments, e.g. `["-y", "@modelcontextprotocol/server-filesystem", "."]`.'),
  cwd: Schema.string()
    .description('Stdio server: working directory, absolute or relative to the app directory (default: the app directory).'),
  env: Schema.dict(Schema.union([String, Boolean])).default({})
    .description('Stdio server: environment changes after `inherit`: a string sets, `true` passes the host\'s value, `false` removes. Values are never logged.'),
  inherit: choice({
    core: 'Only PATH, HOME, USER, LANG, LC_*, TERM, TMPDIR, TZ, XDG_*, npm/Node settings and proxies',
    all: 'The host\'s whole environment, minus excluded names',
    none: 'Nothing but `env`',
  }).default('core')
    .description('Which host variables a stdio server inherits. Credentials (*KEY*, *TOKEN*, *SECRET*, …) never are.'),
  envExclude: Schema.array(String).default([])
    .description('More names never inherited (case-insensitive globs), on top of the built-in list.'),
  url: Schema.string()
    .description('Streamable HTTP server: its endpoint URL (http or https).'),
  headers: Schema.dict(String).default({})
    .description('Streamable HTTP server: headers sent with every request (e.g. `Authorization`). Values are never logged.'),
  allow: unsetGroup(Schema.array(String))
    .description('Only these of the server\'s tools (its own names) are mounted. Omit for all.'),
  deny: Schema.array(String).default([])
    .description('These of the server\'s tools (its own names) are never mounted.'),
  startupTimeout: duration({ min: 1 }).default(30_000)
    .description('Milliseconds to start the server, initialize and list its tools.'),
  callTimeout: duration({ min: 1 }).default(120_000)
    .description('Milliseconds one tool call may take; then the server gets notifications/cancelled and the call fails with MCP_TIMEOUT.'),
  killGrace: duration().default(2_000)
    .description('At unload. Stdio server: milliseconds between closing stdin, SIGTERM and SIGKILL of its process group. HTTP server: most milliseconds the DELETE that ends its session is waited for.'),
  maxTools: count({ min: 1, max: 1024 }).default(128)
    .description('Most tools mounted from this server; more are skipped with a warning.'),
  relistInterval: duration({ max: 60_000 }).default(1_000)
    .description('Least milliseconds between two re-lists of the server\'s tools; tools/list_changed notifications meanwhile become one re-list.'),
  maxMessageBytes: count({ min: 1024, max: 256 * 1024 * 1024 }).default(8 * 1024 * 1024)
    .description('Stdio server: the largest message it may send (bytes); a longer one closes the connection.'),
  maxContentParts: count({ min: 1, max: 1024 }).default(16)
    .description('Content parts of a tool result turned into text; the rest are counted in a note.'),
  maxPartChars: count({ min: 64 }).default(16 * 1024)
    .description('Characters kept of each content part (the registry caps the whole result as well).'),
  maxImages: count({ max: 16 }).default(4)
    .description('Images of a result passed on to the model (PNG, JPEG, GIF, WebP) for models that accept images; 0: none. The rest stay notes.'),
  maxImageBytes: count({ min: 1024, max: 20 * 1024 * 1024 }).default(1024 * 1024)
    .description('Largest image passed on (decoded bytes); a larger one stays a note.'),
})
