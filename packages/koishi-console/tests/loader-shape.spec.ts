/// <reference types="mocha" />
// The entry as Koishi's loader sees it: a namespace plugin (name, inject, Config, apply), and its config form's defaults and bounds.
import { readFileSync } from 'node:fs'
import { expect } from 'chai'

describe('@cordis-subagents/koishi-console entry (as the loader sees it)', () => {
  it('is a namespace plugin that needs the console, agents and subagents; no default export', async () => {
    const mod = await import('@cordis-subagents/koishi-console')
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('subagents-console')
    expect(mod.inject).to.deep.equal({ required: ['console', 'agents', 'subagents'] })
    expect(mod.apply).to.be.a('function')
    const meta = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { koishi: { service: unknown } }
    expect(meta.koishi.service).to.deep.equal({ required: ['console', 'agents', 'subagents'], optional: ['auth'] })
  })

  it('config: viewing at authority 3, acting at 4; the standalone console\'s bounds', async () => {
    const { Config } = await import('@cordis-subagents/koishi-console')
    expect(Config({})).to.deep.include({
      viewAuthority: 3, actAuthority: 4, maxTrees: 20, maxNodesPerTree: 256,
      maxTranscriptEntries: 500, maxEntryChars: 4000, flushInterval: 100,
    })
    const refused = [
      { viewAuthority: 0 }, { actAuthority: 6 }, { maxNodesPerTree: 0 }, { maxEntryChars: 99 }, { flushInterval: 5 }, { transports: { x: 'pigeon' } },
    ]
    for (const bad of refused) {
      expect(() => Config(bad as never), JSON.stringify(bad)).to.throw()
    }
  })
})
