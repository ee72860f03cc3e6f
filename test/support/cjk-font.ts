// Chinese text in the npm Chromium (browser.ts), whose fonts (its own, DejaVu from npm) have no CJK glyph: Noto Sans SC
// from npm (@fontsource/noto-sans-sc, its unicode-range subsets as woff2) is served to the page through a route of
// its own and declared with @font-face, first in the console's font stacks. For the screenshot scripts of Koishi's
// console, whose market and config pages show hard-coded Chinese labels.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Locator, Page } from 'playwright-core'

/** The path the page fetches the font files under (on its own origin); nothing on the server answers it. */
const ROUTE = '/__cjk-font/'
const FAMILY = 'Noto Sans SC'
/** The console's own stack (`--font-family` of @koishijs/client), after the served family. */
const STACK = `'${FAMILY}', PingFang SC, Hiragino Sans GB, Microsoft YaHei, SimSun, sans-serif`

function fontsDir(): string {
  return dirname(createRequire(import.meta.url).resolve('@fontsource/noto-sans-sc/package.json'))
}

/** The package's @font-face rules for these weights, their files under ROUTE (woff2 only: Chromium reads it). */
function fontFaces(weights: readonly number[]): string {
  return weights.map((weight) => readFileSync(join(fontsDir(), `${weight}.css`), 'utf8')
    .replace(/src: url\(\.\/files\/([\w-]+\.woff2)\) format\('woff2'\)[^;]*;/g, `src: url(${ROUTE}$1) format('woff2');`)).join('\n')
}

export interface CjkFont {
  /** The font files the page fetched (names under the package's files/). */
  served: string[]
  /**
   * Waits until the page has loaded the fonts its text needs, then checks that the element's text renders with the
   * served family: throws when no face loaded, the element's font stack does not start with it, or it lacks a glyph.
   */
  ready(element: Locator): Promise<void>
}

/** Serves the font to `page` (call before its first `goto`) and adds the @font-face rules to every document. */
export async function serveCjkFont(page: Page, weights: readonly number[] = [400, 700]): Promise<CjkFont> {
  const files = join(fontsDir(), 'files')
  const served: string[] = []
  await page.route(`**${ROUTE}*`, async (route) => {
    const name = new URL(route.request().url()).pathname.slice(ROUTE.length)
    if (!/^[\w-]+\.woff2$/.test(name)) return route.fulfill({ status: 404 })
    served.push(name)
    await route.fulfill({ status: 200, contentType: 'font/woff2', body: readFileSync(join(files, name)) })
  })
  // Form controls do not inherit the page's font (the browser's own style gives them its system font).
  const css = `${fontFaces(weights)}\n:root { --font-family: ${STACK}; --el-font-family: ${STACK}; }\n`
    + `body, button, input, textarea, select { font-family: ${STACK}; }\n`
  type Doc = {
    createElement(tag: string): { textContent: string }, documentElement: { appendChild(node: unknown): void } | null
    addEventListener(event: string, listener: () => void): void
  }
  await page.addInitScript((text) => {
    const doc = (globalThis as unknown as { document: Doc }).document
    const style = doc.createElement('style')
    style.textContent = text
    if (doc.documentElement) doc.documentElement.appendChild(style)
    else doc.addEventListener('DOMContentLoaded', () => doc.documentElement!.appendChild(style))
  }, css)
  return {
    served,
    async ready(element) {
      type Style = { getComputedStyle(node: unknown): { fontFamily: string } }
      const shown = await element.evaluate((node) => {
        const text = node.textContent?.trim() || (node as unknown as { placeholder?: string }).placeholder || ''
        return { text, stack: (globalThis as unknown as Style).getComputedStyle(node).fontFamily }
      })
      if (!shown.text) throw new Error('the element shows no text')
      if (!shown.stack.replaceAll('"', '').startsWith(FAMILY)) throw new Error(`"${shown.text}" is set in ${shown.stack}, not ${FAMILY} first`)
      type Fonts = {
        ready: Promise<unknown>, check(font: string, text: string): boolean
        forEach(each: (face: { family: string, status: string }) => void): void
      }
      const state = await page.evaluate(async ({ family, sample }) => {
        const fonts = (globalThis as unknown as { document: { fonts: Fonts } }).document.fonts
        await fonts.ready
        let loaded = 0
        fonts.forEach((face) => { if (face.family.replaceAll('"', '') === family && face.status === 'loaded') loaded++ })
        return { loaded, covers: fonts.check(`16px "${family}"`, sample) }
      }, { family: FAMILY, sample: shown.text })
      if (!state.loaded || !served.length) throw new Error(`the page loaded no face of ${FAMILY} (served: ${served.length} files)`)
      if (!state.covers) throw new Error(`${FAMILY} does not cover "${shown.text}" on the page`)
    },
  }
}
