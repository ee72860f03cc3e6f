import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { storeBehaviour } from './behaviour.js'

describe('checkpoints on SQLite (@minatojs/driver-sqlite, a file in a temp dir)', function () {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-sqlite-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))
  let file = 0
  storeBehaviour(() => ({ kind: 'sqlite', path: join(dir, `store-${file}.db`) }), async () => {
    file++
  })
})
