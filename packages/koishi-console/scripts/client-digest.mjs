// The digest dist/ is stamped with: every file under client/ (path and bytes) and the version of
// @koishijs/client that built it. A change to either makes dist/ stale.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative } from 'node:path'

export function sourceDigest(root) {
  const hash = createHash('sha256')
  const files = readdirSync(join(root, 'client'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
    .sort()
  for (const file of files) hash.update(`${relative(root, file)}\0`).update(readFileSync(file)).update('\0')
  const tooling = createRequire(join(root, 'package.json'))('@koishijs/client/package.json').version
  return hash.update(`@koishijs/client@${tooling}`).digest('hex')
}
