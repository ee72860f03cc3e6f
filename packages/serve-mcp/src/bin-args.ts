import { resolve } from 'node:path'
import { configFileProblem } from '@cordis-subagents/shared'

export const BIN_NAME = 'cordis-subagents-mcp'

/** Exit codes of the bin. */
export const EXIT = { stopped: 0, notServed: 1, usage: 2, sighup: 129, sigint: 130, sigterm: 143 } as const

const USAGE = `usage: ${BIN_NAME} [config file]
  Starts the cordis app of the config file (a cordis.yml for @cordisjs/loader; default: ./cordis.yml)
  and serves MCP on stdin/stdout. The config must load @cordis-subagents/serve-mcp (until this
  release @cordis-subagents/mcp/serve) with transport: stdio, beside the plugins of the tools it
  serves. stdout carries only MCP messages; logs go to stderr. The file
  is never written back.

environment:
  CORDIS_SUBAGENTS_MCP_VERBOSE=1   debug logs (on stderr); also true, yes, on. 0, false, no, off or
                                   unset: none; any other value is ignored with one line on stderr
  .env and .env.local next to the config file are read into the environment (as the loader does).

exit codes:
  0         the MCP client closed stdin or stopped reading stdout; the app stopped
  1         the app did not serve MCP: no stdio serve-mcp entry started (a plugin, its config or
            the MCP SDK failed to load, or it did not start within 30 s), or writing to stdout failed
            other than by the client going away; the reason is on stderr
  2         usage error, or the config file is missing, not a file or unreadable
  129, 130, 143  stopped by SIGHUP, SIGINT, SIGTERM
`

/** `--help`, or the config file to serve; otherwise the exit code, the reason already on stderr. */
export function parseArgs(argv: string[]): { filename: string } | { exit: number } {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stderr.write(USAGE)
    return { exit: EXIT.stopped }
  }
  const unknown = argv.find((arg) => arg.startsWith('-'))
  const files = argv.filter((arg) => !arg.startsWith('-'))
  if (unknown || files.length > 1) {
    process.stderr.write(`${BIN_NAME}: ${unknown ? `unknown option ${unknown}` : 'give at most one config file'}\n${USAGE}`)
    return { exit: EXIT.usage }
  }
  const filename = resolve(files[0] ?? 'cordis.yml')
  const problem = configFileProblem(filename, WHAT, 'check its permissions and those of its folders for the user the client runs this as')
  if (!problem) return { filename }
  process.stderr.write(`${BIN_NAME}: config file ${filename} ${problem}\n`)
  return { exit: EXIT.usage }
}

const WHAT = 'give the path of a cordis.yml that loads @cordis-subagents/serve-mcp with transport: stdio (see --help)'

