/// <reference types="mocha" />
// A command that cannot be executed fails ACP_SPAWN_FAILED with the same reason whether or not the run gets a
// cgroup. Through the cgroup wrapper (`sh -c '…; exec "$@"'`) a script whose #! interpreter is missing, or a
// directory, used to fail ACP_STARTUP_FAILED with exit code 127 / 126 and the cgroup path in the stderr tail.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type AcpProvider, type AcpProviderOptions, cgroupBase, createAcpProvider } from '../src/index.js'
import { assertNoLeftovers, FAST, fakeParent, logger, rejection, request } from './helpers.js'

const isRoot = process.getuid?.() === 0
const CONTAINMENTS = ['auto', 'process-group'] as const

describe('provider-acp: a command that cannot be executed, with and without a cgroup', function () {
  this.timeout(30_000)
  const providers: AcpProvider[] = []
  let dir: string

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'acp-spawn-failure-'))
    // runAs' user must reach the scripts.
    chmodSync(dir, 0o755)
    writeFileSync(join(dir, 'missing-interpreter.sh'), '#!/nonexistent/acp-test-interpreter\n', { mode: 0o755 })
    writeFileSync(join(dir, 'exits-127.sh'), '#!/bin/sh\necho "acp-test-agent: npx: not found" >&2\nexit 127\n', { mode: 0o755 })
    mkdirSync(join(dir, 'a-directory'))
  })

  after(() => rmSync(dir, { recursive: true, force: true }))

  afterEach(async () => {
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    assertNoLeftovers()
  })

  async function failure(command: string, options: Partial<AcpProviderOptions>) {
    const acp = createAcpProvider({ command, args: [], logger, ...FAST, ...options, env: FAST.env })
    providers.push(acp)
    return rejection(acp.start(request({ parent: fakeParent(dir) })))
  }

  const cases = [
    ['a script whose #! interpreter is missing', 'missing-interpreter.sh', 'ENOENT'],
    ['a directory', 'a-directory', 'EACCES'],
  ] as const
  for (const [what, file, errno] of cases) {
    it(`${what}: ACP_SPAWN_FAILED (${errno}) under containment auto${cgroupBase() ? ' (a cgroup here)' : ''} and process-group alike`, async () => {
      for (const containment of CONTAINMENTS) {
        const error = await failure(join(dir, file), { containment })
        expect(error.code, `${containment}: ${error.message}`).to.equal('ACP_SPAWN_FAILED')
        expect(error.message, containment).to.match(new RegExp(`^Could not start the ACP agent ".*${file}": ${errno}\\.`))
        expect(error.message, containment).to.not.match(/cordis-acp-/)
      }
    })
  }

  it('an agent that exits 127 by itself is still ACP_STARTUP_FAILED with its exit code and stderr', async () => {
    for (const containment of CONTAINMENTS) {
      const error = await failure(join(dir, 'exits-127.sh'), { containment })
      expect(error.code, `${containment}: ${error.message}`).to.equal('ACP_STARTUP_FAILED')
      expect(error.message, containment).to.match(/exited with code 127 during initialize/)
      expect(error.message, containment).to.match(/acp-test-agent: npx: not found/)
    }
  })

  if (isRoot && cgroupBase()) {
    it('runAs: setpriv in the cgroup failing to exec the script is ACP_SPAWN_FAILED (ENOENT), as Node\'s own switch of user is', async () => {
      for (const containment of CONTAINMENTS) {
        const error = await failure(join(dir, 'missing-interpreter.sh'), { containment, runAs: 'nobody' })
        expect(error.code, `${containment}: ${error.message}`).to.equal('ACP_SPAWN_FAILED')
        expect(error.message, containment).to.match(/: ENOENT\./)
      }
    })
  }
})
