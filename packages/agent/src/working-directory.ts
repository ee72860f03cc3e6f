import { configuredDirectory } from '@cordis-subagents/shared'
import { AgentError } from './errors.js'

/**
 * The runtime's configured `cwd` (root agents' working directory, which their children inherit) as an absolute path:
 * relative to the app directory `baseDir` (`ctx.baseDir`, as every plugin here resolves a relative path), checked to
 * be a directory one can enter. Called once, at load: creating an agent does no file system work. Undefined when no
 * cwd is configured. Throws `INVALID_OPTIONS` (the plugin fails at load) saying what to fix.
 */
export function configuredCwd(cwd: unknown, baseDir: string): string | undefined {
  if (cwd === undefined || cwd === '') return undefined
  if (typeof cwd !== 'string') {
    throw new AgentError('INVALID_OPTIONS', `agents config cwd must be a string (a directory), got ${typeof cwd}.`)
  }
  const { absolute, where, problem } = configuredDirectory(cwd, baseDir)
  if (!problem) return absolute
  throw new AgentError('INVALID_OPTIONS', `agents config cwd ${where} ${problem}. Set cwd to an existing directory (absolute, or relative `
    + 'to the app directory), or omit it to use the process\'s working directory.')
}
