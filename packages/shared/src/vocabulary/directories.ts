/**
 * A directory named in config (an agent runtime's or an ACP provider's `cwd`): resolved against the app directory when
 * relative, and checked once, at load, to exist, be a directory and be enterable, so a typo fails its plugin loudly
 * instead of the first child it would have started. Each plugin words its own coded error from what this finds.
 */
import { accessSync, constants, statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'

export interface ConfiguredDirectory {
  /** The absolute path. */
  absolute: string
  /** How to name it in a message: the path, or the configured text and what it resolved to. */
  where: string
  /** What is wrong with it ("does not exist", "is not a directory", …); undefined when it is usable. */
  problem?: string
}

/** `path` resolved against `baseDir` (`ctx.baseDir`) when relative, and what, if anything, keeps it from being a working directory. */
export function configuredDirectory(path: string, baseDir: string): ConfiguredDirectory {
  const absolute = isAbsolute(path) ? resolve(path) : resolve(baseDir, path)
  const where = isAbsolute(path) ? absolute : `${JSON.stringify(path)} (resolved against the app directory ${baseDir} to ${absolute})`
  try {
    if (!statSync(absolute).isDirectory()) return { absolute, where, problem: 'is not a directory' }
    accessSync(absolute, constants.X_OK)
    return { absolute, where }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const problem = code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist'
      : code === 'EACCES' ? 'cannot be entered (permission denied)' : `is not usable (${code})`
    return { absolute, where, problem }
  }
}
