// The console's own buttons for issue 46's install path, driven in Chromium (the npm one, browser.ts): the market
// page's card and its install dialog. Used by test/koishi-install.slow.spec.ts and koishi-install-flow.ts (the
// install screenshots).
import { type Browser as PlaywrightBrowser, chromium, type Locator, type Page } from 'playwright-core'
import { testBrowser } from './browser.js'

export interface ConsolePage {
  browser: PlaywrightBrowser
  page: Page
  /** Console messages of type error and uncaught page errors. */
  errors: string[]
}

/** Chromium on `path` of the console; `prepare` sees the page before it loads (routes, init scripts). */
export async function openConsole(url: string, path: string, prepare?: (page: Page) => Promise<void>): Promise<ConsolePage> {
  const binary = await testBrowser()
  const browser = await chromium.launch({
    executablePath: binary.executablePath, env: { ...process.env, ...binary.env }, args: binary.args, headless: true,
  })
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.setDefaultTimeout(120_000)
  const errors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => errors.push(error.message))
  await prepare?.(page)
  await page.goto(`${url}${path}`)
  return { browser, page, errors }
}

/** The market's card of a package (the market lists it once the index and the registry answered). */
export function marketCard(page: Page, name: string): Locator {
  return page.locator('.market-package', { hasText: name.split('/')[0] })
}

/** The card's add button: opens the install dialog with the version and the peer dependencies. */
export async function openInstallDialog(page: Page, name: string): Promise<Locator> {
  await marketCard(page, name).locator('button').first().click()
  const dialog = page.locator('.el-dialog', { hasText: name })
  await dialog.waitFor()
  return dialog
}

/**
 * A button of the console's header menu by its label (the console shows the label as the icon's tooltip on hover;
 * the icons carry no name).
 */
export async function menuItem(page: Page, label: string): Promise<Locator> {
  const items = page.locator('.layout-header .menu-item:not(.disabled)')
  await items.first().waitFor()
  for (const item of await items.all()) {
    if (!await item.isVisible()) continue
    await item.hover({ timeout: 10_000 })
    const tip = await item.getAttribute('aria-describedby')
    if (tip && (await page.locator(`[id="${tip}"]`).textContent())?.trim() === label) return item
  }
  throw new Error(`no menu item "${label}" in the header`)
}
