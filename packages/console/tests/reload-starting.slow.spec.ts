/// <reference types="mocha" />
// An entry edited again while its last edit still starts (two saves of cordis.yml in a row): the start the second edit
// overtook returns without serving, and cordis used to expose that stopped instance as ctx.subagentConsole anyway, so
// the live load's own exposure then failed ("service subagentConsole has been registered") and cancelled the entry.
// The service is now exposed by its start once it listens, never by a start that was overtaken.
import { expect } from 'chai'
import { accepts, eventually, freePort } from '@cordis-subagents/test-support'
import { ACTIVE, codeOf, type LoadedApp, startLoadedApp } from '@cordis-subagents/test-support'

describe('console: edited again while it starts', function () {
  this.timeout(60_000)
  let app: LoadedApp | undefined
  after(() => app?.stop())

  it('the last edit serves on its port, exposed as ctx.subagentConsole, and nothing fails', async () => {
    const port = await freePort()
    app = await startLoadedApp(`- id: console
  name: '@cordis-subagents/console'
  config:
    port: ${port}
`, { prefix: 'console-loader-' })
    await eventually(() => app!.ctx.get('subagentConsole')?.url, 'the console serving')
    for (let turns = 0, maxTrees = 2; turns < 6; turns++) {
      const first = app.loader.update('console', { config: { port, maxTrees: maxTrees++ } })
      for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
      await Promise.all([first, app.loader.update('console', { config: { port, maxTrees: maxTrees++ } })])
      await app.ctx.lifecycle.flush()
      await eventually(() => app!.ctx.get('subagentConsole')?.url, `served again after two edits ${turns} turns apart`)
      expect(app.errors.map((error) => `${String(codeOf(error))}: ${String(error)}`), `${turns} turns apart`).to.deep.equal([])
      expect(app.status('console')).to.equal(ACTIVE)
      expect(app.ctx.get('subagentConsole')?.config.maxTrees).to.equal(maxTrees - 1)
      expect(await accepts(port)).to.equal(true)
    }
  })
})
