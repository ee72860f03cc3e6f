import { accessSync, constants, statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
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
  const absolute = isAbsolute(cwd) ? resolve(cwd) : resolve(baseDir, cwd)
  const where = isAbsolute(cwd) ? absolute : `${JSON.stringify(cwd)} (resolved against the app directory ${baseDir} to ${absolute})`
  let problem: string | undefined
  try {
    if (!statSync(absolute).isDirectory()) problem = 'is not a directory'
    else accessSync(absolute, constants.X_OK)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    problem ??= code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist'
      : code === 'EACCES' ? 'cannot be entered (permission denied)' : `is not usable (${code})`
  }
  if (!problem) return absolute
  throw new AgentError('INVALID_OPTIONS', `agents config cwd ${where} ${problem}. Set cwd to an existing directory (absolute, or relative `
    + 'to the app directory), or omit it to use the process\'s working directory.')
}
