// examples/quickstart/koishi.yml (the quick start's MCP server, server-filesystem, in a Koishi app)
// loaded by Koishi 4.18's own loader (`koishi start`, in a child process: see koishi-yml.slow.spec.ts).
// A copy runs in a temporary project whose node_modules links to this repository's, with
// test/fixtures/koishi-yml-mcp/probe.cjs appended: its spawn child reads notes.txt of the project
// through files__read_text_file. Exit code 0 shows the server process went with the plugin.
import { execFileSync } from 'node:child_process'
import { appendFileSync, copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { koishiStartResult } from './support/koishi-start.js'
import { QUICKSTART, ROOT } from './helpers.js'

const NOTES = 'The notes say: offline and read-only.'

describe('examples/quickstart/koishi.yml: the quick start\'s MCP server in a Koishi app (`koishi start`)', function () {
  this.timeout(60_000)
  let project: string

  before(() => {
    const packages = ['tools', 'agent', 'subagents-service', 'provider-spawn', 'definitions', 'subagent-tool', 'mcp'].map((p) => `packages/${p}`)
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', ...packages, 'examples/quickstart'], { cwd: ROOT, stdio: 'pipe' })
    project = mkdtempSync(join(tmpdir(), 'koishi-mcp-'))
    copyFileSync(join(QUICKSTART, 'koishi.yml'), join(project, 'koishi.yml'))
    cpSync(join(QUICKSTART, '.claude'), join(project, '.claude'), { recursive: true })
    appendFileSync(join(project, 'koishi.yml'), '  ./probe.cjs:probe: {}\n')
    copyFileSync(join(ROOT, 'test/fixtures/koishi-yml-mcp/probe.cjs'), join(project, 'probe.cjs'))
    writeFileSync(join(project, 'notes.txt'), `${NOTES}\n`)
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
  })
  after(() => {
    if (project) rmSync(project, { recursive: true, force: true })
  })

  it('mounts server-filesystem read-only as files__*, a spawn child reads a file with it, and the app exits 0', async () => {
    expect(readFileSync(join(QUICKSTART, 'koishi.yml'), 'utf8')).to.include('@modelcontextprotocol/server-filesystem')
    const result = await koishiStartResult(project, 45_000)
    expect(result.error).to.equal(undefined)
    expect(result.tools).to.include.members(['subagent', 'list_files', 'files__read_text_file', 'files__list_directory'])
    expect(result.tools.filter((name: string) => /^files__.*(write|edit|move|create)/.test(name))).to.deep.equal([])
    expect(result.childTools).to.deep.equal(['files__read_text_file'])
    expect(result).to.deep.include({ stopReason: 'completed', text: `the child read: ${NOTES}` })
  })
})
