/// <reference types="mocha" />
// The reader of an agents directory keeps each file's last parse while the file's inode, size and
// times stay the same, so a reload parses only the files that changed (counted through `parse`).
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { AgentDirectory } from '../src/claude/directory.js'
import { parseAgentFile } from '../src/claude/parse.js'

const agent = (does: string) => `---\ndescription: ${does}\n---\nBe ${does}\n`

describe('definitions: AgentDirectory parses only the files that changed', () => {
  let dir: string
  let agentsDir: string

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'definitions-cache-'))
    agentsDir = join(dir, 'agents')
    mkdirSync(agentsDir)
    for (const name of ['a', 'b', 'c']) writeFileSync(join(agentsDir, `${name}.md`), agent(name))
  })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  it('parses a file again only when its inode, size or times changed', async () => {
    const parsed: string[] = []
    const parse: typeof parseAgentFile = (file, ...rest) => {
      parsed.push(file.slice(agentsDir.length + 1))
      return parseAgentFile(file, ...rest)
    }
    const directory = new AgentDirectory(agentsDir, { provider: 'spawn', tools: {}, models: {} }, dir, { warn: () => {}, parse })
    const names = async () => (await directory.read()).map((definition) => definition.name)
    expect(await names()).to.deep.equal(['a', 'b', 'c'])
    expect(parsed.splice(0)).to.deep.equal(['a.md', 'b.md', 'c.md'])
    writeFileSync(join(agentsDir, '.a.md.swp'), 'vim swap block')
    writeFileSync(join(agentsDir, 'notes.txt'), 'not an agent')
    expect(await names()).to.deep.equal(['a', 'b', 'c'])
    expect(parsed.splice(0)).to.deep.equal([])
    writeFileSync(join(agentsDir, 'b.md'), agent('b, edited'))
    expect((await directory.read()).find((definition) => definition.name === 'b')!.does).to.equal('b, edited')
    expect(parsed.splice(0)).to.deep.equal(['b.md'])
    // A rename-save puts a new inode under the name.
    writeFileSync(join(agentsDir, '.c.md.tmp'), agent('c'))
    renameSync(join(agentsDir, '.c.md.tmp'), join(agentsDir, 'c.md'))
    rmSync(join(agentsDir, 'a.md'))
    expect(await names()).to.deep.equal(['b', 'c'])
    expect(parsed.splice(0)).to.deep.equal(['c.md'])
    // A bad file fails every read, parsed once while it stays as it is.
    writeFileSync(join(agentsDir, 'bad.md'), 'no front matter\n')
    const failure = () => directory.read().then(() => 'read', (error: Error) => error.message)
    expect(await failure()).to.match(/bad\.md: no YAML front matter/)
    expect(await failure()).to.match(/bad\.md: no YAML front matter/)
    expect(parsed.splice(0)).to.deep.equal(['bad.md'])
  })
})
