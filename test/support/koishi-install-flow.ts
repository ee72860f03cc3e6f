// Issue 46's install path as a Koishi user sees it, for scripts/screenshot-koishi-install.ts: the same loopback set-up
// as test/koishi-install.slow.spec.ts (koishi-install.ts: our packages on a verdaccio on 127.0.0.1, a Koishi project
// with the console, its config page and the market; koishi-install-page.ts: the console's own buttons in Chromium),
// with Noto Sans SC served to the page (cjk-font.ts) so the console's Chinese labels render. The steps: the market
// lists the package, its install dialog, the install, the config page's add with the model section filled in, the
// enable. Each step waits for the text that shows it happened; `shoot` sees the page after each.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { eventually } from '@cordis-subagents/test-support'
import { type CjkFont, serveCjkFont } from './cjk-font.js'
import { type ConsolePage, marketCard, menuItem, openConsole, openInstallDialog } from './koishi-install-page.js'
import { type InstallRig, type KoishiProcess, MARKET_PACKAGE, settled, startInstallRig, startKoishi } from './koishi-install.js'
import { field } from './koishi-console.js'
import { ROOT } from '../helpers.js'

type InstallStep = 'market' | 'install' | 'config' | 'enabled'

/** What the config step types into the model section (the README's Ollama example). */
const MODEL = { baseURL: 'http://127.0.0.1:11434/v1', model: 'qwen2.5' }

const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/koishi-plugin-subagents/package.json'), 'utf8')) as
  { koishi: { description: { zh: string } } }

/** Runs the flow on loopback; throws when a step's text does not appear. */
export async function installFlow(shoot: (step: InstallStep, page: Page) => Promise<void>): Promise<{ errors: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'koishi-install-shots-'))
  let rig: InstallRig | undefined
  let koishi: KoishiProcess | undefined
  let view: ConsolePage | undefined
  try {
    rig = await startInstallRig(dir)
    koishi = await startKoishi(rig.project)
    let font: CjkFont | undefined
    view = await openConsole(koishi.url, '/market', async (page) => { font = await serveCjkFont(page) })
    const { page } = view
    const search = page.locator('.search-box input')
    await search.fill('subagents')
    await search.press('Enter')
    const card = marketCard(page, MARKET_PACKAGE)
    await card.getByText(manifest.koishi.description.zh).waitFor()
    await font!.ready(card.getByText(manifest.koishi.description.zh))
    await font!.ready(card.locator('button', { hasText: '添加' }))
    await shoot('market', page)

    const dialog = await openInstallDialog(page, MARKET_PACKAGE)
    const install = dialog.locator('button', { hasText: '安装' })
    await install.waitFor()
    await font!.ready(install)
    await shoot('install', page)
    await install.click()
    await page.locator('.el-message--success', { hasText: '安装成功' }).waitFor({ timeout: 300_000 })
    await settled(koishi)

    await page.goto(`${koishi.url}/plugins`)
    await (await menuItem(page, '添加插件')).click()
    await page.locator('.package', { has: page.locator('h3', { hasText: /^@cordis-subagents\/subagents$/ }) }).click()
    await page.waitForURL(/\/plugins\/[a-z0-9]+$/)
    const id = page.url().split('/').pop()!
    const baseURL = field(page, 'model', 'baseURL').locator('input')
    await baseURL.waitFor({ timeout: 60_000 })
    await baseURL.fill(MODEL.baseURL)
    await field(page, 'model', 'model').locator('input').fill(MODEL.model)
    await page.locator('h2.k-schema-header').first().evaluate((heading) => heading.scrollIntoView())
    await font!.ready(page.locator('.k-schema-header', { hasText: '过滤器设置' }))
    await shoot('config', page)

    await (await menuItem(page, '启用插件')).click()
    await page.locator('.el-message', { hasText: '插件已启用' }).waitFor({ timeout: 30_000 })
    const yml = () => readFileSync(join(rig!.project, 'koishi.yml'), 'utf8')
    await eventually(() => koishi!.stdout().includes(`apply plugin @cordis-subagents/subagents:${id}`), 'Koishi loaded the plugin', 60_000)
    await eventually(() => yml().includes(`baseURL: ${MODEL.baseURL}`) && !yml().includes(`~@cordis-subagents/subagents:${id}`),
      'the entry on in koishi.yml, with the model filled in', 30_000)
    await shoot('enabled', page)
    return { errors: view.errors }
  } finally {
    await view?.browser.close()
    await koishi?.stop()
    await rig?.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
