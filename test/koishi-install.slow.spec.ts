// Issue 46: a Koishi user installs the market package from the console, then adds and enables it on the config page.
// Every workspace package it needs is packed from the built tree and published to verdaccio on 127.0.0.1
// (support/loopback-registry.ts); a Koishi project with the console, its config page and the market, installed by npm
// from that registry (support/koishi-install.ts), runs `koishi start`; in Chromium the market page lists the package,
// its install button runs npm against the loopback registry, and the config page's own buttons add and enable it.
// Only the market's search index is built by the test (from the registry's own answers, as Koishi's index is built);
// the registry, npm, Koishi and the console are real.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import { type ConsolePage, marketCard, menuItem, openConsole, openInstallDialog } from './support/koishi-install-page.js'
import { type InstallRig, KNOWN_MARKET_ERROR, type KoishiProcess, MARKET_PACKAGE, settled, startInstallRig, startKoishi } from './support/koishi-install.js'
import { ROOT } from './helpers.js'
import { field } from './support/koishi-console.js'
import { expectCleanStop } from './support/koishi-stop.js'

const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/koishi-plugin-subagents/package.json'), 'utf8')) as
  { version: string, koishi: { description: { zh: string } } }

describe('koishi-plugin-subagents: installed from the Koishi console\'s market, then enabled (loopback registry, chromium)', function () {
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
    // The client shows this once the market's install handler has returned (npm done, the market's own checks done).
    await page.locator('.el-message--success', { hasText: '安装成功' }).waitFor({ timeout: 300_000 })
    expect(koishi!.stdout()).to.match(/market added \d+ packages/)
    // The project is npm's own (its lockfile lists the base npm installed): the market's npm only adds to it.
    expect(koishi!.stdout()).to.not.match(/removed \d+ packages/)
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

  it('the config page\'s own buttons add the installed plugin and enable it, and Koishi loads it', async () => {
    const { page } = view!
    await settled(koishi!)
    await page.goto(`${koishi!.url}/plugins`)
    await (await menuItem(page, '添加插件')).click()
    await page.locator('.package', { has: page.locator('h3', { hasText: /^@cordis-subagents\/subagents$/ }) }).click()
    await page.waitForURL(/\/plugins\/[a-z0-9]+$/)
    const id = page.url().split('/').pop()!
    const yml = () => readFileSync(join(rig!.project, 'koishi.yml'), 'utf8')
    await eventually(() => yml().includes(`~@cordis-subagents/subagents:${id}:`), 'the new entry (off) written to koishi.yml', 30_000)
    // The README's step: enable with the form left empty (every section has its defaults, the model's endpoint is
    // OPENAI_BASE_URL or api.openai.com). The console checks the form's value before it enables: clicked before the
    // new entry's form has rendered, it checks the value the page held before and refuses (当前配置项不满足约束).
    await field(page, 'model', 'baseURL').waitFor({ timeout: 60_000 })
    await (await menuItem(page, '启用插件')).click()
    const message = page.locator('.el-message')
    await message.first().waitFor({ timeout: 30_000 })
    expect(await message.allTextContents()).to.deep.equal(['插件已启用。'])
    await eventually(() => koishi!.stdout().includes(`apply plugin @cordis-subagents/subagents:${id}`), 'Koishi loaded the plugin', 60_000)
    await eventually(() => !yml().includes(`~@cordis-subagents/subagents:${id}`), 'the entry on in koishi.yml', 30_000)
    expect(yml(), yml()).to.include(`'@cordis-subagents/subagents:${id}': {}\n`)
    expect(koishi!.stdout().split(`apply plugin @cordis-subagents/subagents:${id}`)[1]).to.not.include('[E]')
  })

  it('stops cleanly: Koishi exits 0 on SIGTERM, with no error logged but the market\'s known one', async () => {
    await view!.browser.close()
    view = undefined
    const run = await koishi!.stop()
    koishi = undefined
    expectCleanStop(run, KNOWN_MARKET_ERROR)
  })
})
