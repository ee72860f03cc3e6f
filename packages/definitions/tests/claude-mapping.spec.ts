/// <reference types="mocha" />
// The entry's `tools` and `models` maps are looked up by their own keys only: a Claude name that is also
// an Object.prototype member (`constructor`, `toString`) is a name like any other.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import * as Claude from '@cordis-subagents/definitions/claude'
import { type DefinitionsApp, startApp } from './app.js'

describe('definitions: Claude tool and model names that are Object.prototype members', function () {
  let app: DefinitionsApp
  let agentsDir: string

  beforeEach(async () => {
    app = await startApp()
    agentsDir = join(app.dir, 'agents')
    mkdirSync(agentsDir)
  })
  afterEach(async () => { await app.stop() })

  it('`model: constructor` and `model: toString` keep the parent\'s model; `tools: constructor` is kept as written', async () => {
    writeFileSync(join(agentsDir, 'a.md'), '---\ndescription: A.\nmodel: constructor\n---\n')
    writeFileSync(join(agentsDir, 'b.md'), '---\ndescription: B.\nmodel: toString\ntools: constructor, hasOwnProperty, Read\n---\n')
    writeFileSync(join(agentsDir, 'c.md'), '---\ndescription: C.\nmodel: sonnet\n---\n')
    const fork = await app.load(Claude, { dir: 'agents', watch: false, tools: { Read: 'read_file' }, models: { sonnet: 'demo:big' } })
    expect(app.errors).to.deep.equal([])
    expect(fork.status).to.not.equal(3)
    const defs = app.ctx.agentDefinitions
    expect(defs.get('a')).to.not.have.property('model')
    expect(defs.get('b')).to.not.have.property('model')
    expect(defs.get('b')!.uses).to.deep.equal({ allow: ['constructor', 'hasOwnProperty', 'read_file'] })
    expect(defs.get('c')!.model).to.equal('demo:big')
  })
})
