/** The quick start's command line (`npm start -- --help` prints it). */
import { resolve } from 'node:path'
import { DEFAULT_CONFIG } from './app.js'
import { ASK_TASK } from './demo-ask.js'
import { BACKGROUND_TASK } from './demo-background.js'
import { TEAM_TASK } from './demo-team.js'

export const DEFAULT_TASK = 'Which packages make up this repository, and how do they depend on each other? Also report the root workspace scripts.'

export interface Options {
  json: boolean
  interactive: boolean
  verbose: boolean
  view: boolean // --view: the live delegation view (packages/console) in a browser
  config: string
  task: string
}

const USAGE = 'usage: npm start -- [--json] [--interactive] [--view] [--config cordis.yml] [--verbose] [--background | --ask | --team | task]'

/** Exit code of a bad command line or a config file that cannot be used (as the server bins use). */
export const EXIT_USAGE = 2

/** Prints `problem` and the usage line on stderr, then exits 2. */
function usageError(problem: string): never {
  process.stderr.write(`quickstart: ${problem}\n${USAGE}\n`)
  process.exit(EXIT_USAGE)
}

export function parseArgs(argv: string[]): Options {
  const options: Options = { json: false, interactive: false, verbose: false, view: false, config: DEFAULT_CONFIG, task: '' }
  const words: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--json') options.json = true
    else if (arg === '--interactive' || arg === '-i') options.interactive = true
    else if (arg === '--verbose' || arg === '-v') options.verbose = true
    else if (arg === '--background') words.push(BACKGROUND_TASK)
    else if (arg === '--ask') words.push(ASK_TASK)
    else if (arg === '--team') words.push(TEAM_TASK)
    else if (arg === '--view') options.view = true
    else if (arg === '--config') {
      const file = argv[++i]
      if (!file || file.startsWith('-')) usageError('--config needs a file name')
      options.config = resolve(file)
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`)
      process.exit(0)
    } else if (arg === '--') {
      words.push(...argv.slice(i + 1))
      break
    } else if (arg.startsWith('-')) usageError(`unknown option ${arg} (a task that starts with "-" goes after --)`)
    else words.push(arg)
  }
  options.task = words.join(' ').trim() || DEFAULT_TASK
  return options
}

