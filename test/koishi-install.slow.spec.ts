// Issue 46: a Koishi user installs the market package from the console. Every workspace package it needs is packed
// from the built tree and published to verdaccio on 127.0.0.1 (support/loopback-registry.ts); a Koishi project with
// the console, its config page and the market (and npm pointed at that registry only) runs `koishi start`; in
// Chromium the market page lists the package and its install button runs npm against the loopback registry. Only
// the market's search index is built by the test (from the registry's own answers, as Koishi's index is built); the
// registry, npm, Koishi and the console are real.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import { type ConsolePage, marketCard, openConsole, openInstallDialog } from './support/koishi-install-page.js'
import { type InstallRig, type KoishiProcess, MARKET_PACKAGE, startInstallRig, startKoishi } from './support/koishi-install.js'
import { ROOT } from './helpers.js'

const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/koishi-plugin-subagents/package.json'), 'utf8')) as
  { version: string, koishi: { description: { zh: string } } }

describe('koishi-plugin-subagents: installed from the Koishi console\'s market (loopback registry, chromium)', function () {
  this.timeout(600_000)
  let dir: string
  let rig: InstallRig | undefined
  let koishi: KoishiProcess | undefined
  let view: ConsolePage | undefined

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'koishi-install-'))
    rig = await startInstallRig(dir)
    koishi = await startKoishi(rig.project)
    view = await openConsole(koishi.url, '/market')
  })

  after(async () => {
    await view?.browser.close()
    await koishi?.stop()
    await rig?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('the market lists the package with its koishi description, and its install button runs npm against the loopback registry', async () => {
    const { page } = view!
    expect(rig!.published.map((file) => file.split('/').pop())).to.include(`cordis-subagents-koishi-plugin-subagents-${manifest.version}.tgz`)
    expect(await marketCard(page, MARKET_PACKAGE).textContent()).to.include(manifest.koishi.description.zh)
    const dialog = await openInstallDialog(page, MARKET_PACKAGE)
    await dialog.locator('button', { hasText: '安装' }).click()
    await eventually(() => /added \d+ packages/.test(koishi!.stdout()), 'npm finished installing', 300_000)
    const project = JSON.parse(readFileSync(join(rig!.project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
    expect(project.dependencies[MARKET_PACKAGE]).to.equal(manifest.version)
    const installed = JSON.parse(readFileSync(join(rig!.project, 'node_modules', MARKET_PACKAGE, 'package.json'), 'utf8')) as { version: string }
    expect(installed.version).to.equal(manifest.version)
    // npm fetched the tarballs from the loopback registry: its cache (the project's .npmrc puts it in the test's
    // directory) keys each response by its URL.
    const cached = readdirSync(join(dir, 'npm-cache/_cacache/index-v5'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile()).map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8')).join('\n')
    for (const name of [MARKET_PACKAGE, '@cordis-subagents/agent', '@cordis-subagents/subagents-service']) {
      expect(cached, name).to.include(`${rig!.registry.url}/${name}/-/${name.split('/')[1]}-${manifest.version}.tgz`)
    }
    expect(koishi!.stdout()).to.not.match(/npm error/)
  })

  it('stops cleanly: Koishi exits 0 on SIGTERM', async () => {
    await view!.browser.close()
    view = undefined
    const run = await koishi!.stop()
    koishi = undefined
    expect(run.code, run.stdout).to.equal(0)
    expect(run.stdout).to.include('terminated by SIGTERM')
    expect(run.stdout.split('\n').filter((line) => line.includes('[E]'))).to.deep.equal([])
  })
})
