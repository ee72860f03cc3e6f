// A Koishi app serving its agent over A2A from koishi.yml alone (@cordis-subagents/serve-a2a),
// loaded by Koishi's own loader the way a Koishi user runs it (`koishi start`, see
// koishi-yml.slow.spec.ts for why it runs in a child process). The fixture's client plugin calls the
// server over HTTP without and with the generated token, prints `RESULT <json>` and stops the app;
// exit code 0 shows the server closed its socket and connections.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { koishiStartResult } from './support/koishi-start.js'
import { ROOT } from './helpers.js'

const FIXTURE = join(ROOT, 'test/fixtures/koishi-yml-a2a')

describe('koishi.yml serving an agent over A2A (serve-a2a, `koishi start`)', function () {
  this.timeout(60_000)
  let project: string

  before(() => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/serve-a2a'], { cwd: ROOT, stdio: 'pipe' })
    project = mkdtempSync(join(tmpdir(), 'koishi-a2a-'))
    copyFileSync(join(FIXTURE, 'koishi.yml'), join(project, 'koishi.yml'))
    copyFileSync(join(FIXTURE, 'client.cjs'), join(project, 'client.cjs'))
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
  })
  after(() => {
    if (project) rmSync(project, { recursive: true, force: true })
  })

  it('serves on 127.0.0.1, refuses a caller without the token, answers with it, and exits 0 when the app stops', async () => {
    const result = await koishiStartResult(project, 40_000)
    expect(result.error).to.equal(undefined)
    expect(result.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(result).to.deep.include({ anonymous: 401, status: 200, state: 'TASK_STATE_COMPLETED', answer: 'koishi answers: hello' })
  })
})
