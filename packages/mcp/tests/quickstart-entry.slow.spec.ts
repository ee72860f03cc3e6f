/// <reference types="mocha" />
// The quick start's cordis.yml ships an MCP entry (server-filesystem on the repository, disabled by
// default). This runs that entry's config as the loader would (cwd: the file's folder) and reads a
// real file of the repository through it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { load } from 'js-yaml'
import { client, eventually, makeExec, setup } from './helpers.js'

const QUICKSTART = fileURLToPath(new URL('../../../examples/quickstart/', import.meta.url))
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

describe('the quick start\'s MCP entry (examples/quickstart/cordis.yml, mcp-files)', function () {
  this.timeout(30_000)
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('mounts server-filesystem\'s read tools on the repository (write tools denied) and reads package.json', async () => {
    // Only this entry is parsed (other entries use the loader's !!js tag, which js-yaml does not know).
    const shipped = readFileSync(join(QUICKSTART, 'cordis.yml'), 'utf8')
    const block = /^- id: mcp-files\n(?: .*\n?)+/m.exec(shipped)?.[0]
    expect(block, 'the mcp-files entry of the quick start').to.be.a('string')
    const [entry] = load(block!) as Array<{ name: string; config: { name: string } }>
    expect(entry.name).to.equal('@cordis-subagents/mcp')
    // The loader's baseDir is the config file's folder; the entry's relative paths resolve from there.
    ctx.plugin(client, { ...entry.config, cwd: QUICKSTART })
    await eventually('files tools mounted', () => ctx.tools.has('files__read_text_file'), 20_000)
    const names = ctx.tools.list().map((t) => t.name)
    expect(names).to.include.members(['files__list_directory', 'files__directory_tree'])
    expect(names).to.not.include.members(['files__write_file'])
    expect(names.filter((n) => /write|edit|move|create/.test(n))).to.deep.equal([])
    const result = await ctx.tools.view().execute({ name: 'files__read_text_file', input: { path: join(ROOT, 'package.json') } }, makeExec())
    expect(result.isError).to.equal(undefined)
    expect(JSON.parse(result.content).name).to.equal('cordis-subagents')
  })
})
