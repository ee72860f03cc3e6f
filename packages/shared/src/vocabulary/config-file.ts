import { closeSync, openSync, statSync } from 'node:fs'

/**
 * Why `filename` cannot be a bin's config file (one clause, ending in `what`: how to give a good one), or undefined when
 * it is a non-empty file this process can read. `readHint` says what to check when it exists but cannot be read.
 */
export function configFileProblem(filename: string, what: string, readHint = 'check its permissions and those of its folders'): string | undefined {
  try {
    const stat = statSync(filename)
    if (!stat.isFile()) return `is not a file: ${what}`
    if (stat.size === 0) return `is empty: ${what}`
    closeSync(openSync(filename, 'r'))
    return undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return `does not exist: ${what}`
    return `cannot be read (${code ?? String(error)}): ${readHint}`
  }
}
