// A Koishi project with the real console (@koishijs/plugin-console, plugin-config, plugin-market from npm) and the
// market package, started with `koishi start` (koishi-start.ts), and a Chromium page on its config page. Shared by
// test/koishi-console-form.slow.spec.ts and scripts/screenshot-koishi.ts (which writes the README's picture).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser as PlaywrightBrowser, chromium, type Page } from 'playwright-core'
import { testBrowser } from './browser.js'
import { buildPackages, koishiStart, type KoishiRun } from './koishi-start.js'
import { ROOT } from '../helpers.js'
import { freePort } from '@cordis-subagents/test-support'

const FIXTURE = join(ROOT, 'test/fixtures/koishi-console-form')

export interface ConsoleProject {
  dir: string
  url: string
  /** Everything the Koishi process printed so far. */
  stdout(): string
  /** Stops the worker with SIGTERM (Koishi's own clean exit) and waits for `koishi start` to end. */
  stop(): Promise<KoishiRun>
}

async function waitFor<T>(what: string, read: () => T | undefined, output: () => string, bound: number): Promise<T> {
  for (const end = Date.now() + bound; Date.now() < end;) {
    const value = read()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`no ${what} within ${bound} ms; Koishi printed:\n${output()}`)
}

export interface ConsoleProjectOptions {
  /** The fixture's koishi.yml (default: the market package's, test/fixtures/koishi-console-form/koishi.yml). */
  yml?: string
  /** Workspace packages (folder names) to build first (default: the market package). */
  build?: readonly string[]
  /**
   * Cordis packages (folder names) each wrapped as a Koishi package `koishi-plugin-cordis-<name>` that re-exports it,
   * the way a Koishi package composing one would: the console lists and renders only `koishi-plugin-*` packages.
   */
  wrap?: readonly string[]
}

/** `node_modules` of the project: each entry links to this repository's, beside the wrapper packages. */
function linkModules(dir: string, wrap: readonly string[]): void {
  if (!wrap.length) return symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const modules = join(dir, 'node_modules')
  mkdirSync(modules)
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry))
  for (const name of wrap) {
    const folder = join(modules, `koishi-plugin-cordis-${name}`)
    mkdirSync(folder)
    writeFileSync(join(folder, 'package.json'), `${JSON.stringify({
      name: `koishi-plugin-cordis-${name}`, version: '0.1.0', type: 'module', main: 'index.js',
      peerDependencies: { koishi: '^4.18.0' }, koishi: { description: { en: `@cordis-subagents/${name} on its own` } },
    })}\n`)
    // A class plugin is the package's default export (checkpoints, serve-a2a, serve-mcp).
    const withDefault = /export default|as default\b/.test(readFileSync(join(ROOT, 'packages', name, 'src/index.ts'), 'utf8'))
    writeFileSync(join(folder, 'index.js'), `export * from '@cordis-subagents/${name}'\n${withDefault ? `export { default } from '@cordis-subagents/${name}'\n` : ''}`)
  }
}

export async function startConsoleProject(options: ConsoleProjectOptions = {}): Promise<ConsoleProject> {
  const wrap = options.wrap ?? []
  buildPackages(options.build ?? ['koishi-plugin-subagents'])
  const dir = mkdtempSync(join(tmpdir(), 'koishi-console-form-'))
  const port = await freePort()
  writeFileSync(join(dir, 'koishi.yml'), readFileSync(options.yml ?? join(FIXTURE, 'koishi.yml'), 'utf8')
    .replaceAll('__MAX_PORT__', String(Math.min(port + 50, 65535))).replaceAll('__PORT__', String(port)))
  copyFileSync(join(FIXTURE, 'watch.cjs'), join(dir, 'watch.cjs'))
  // The market reads the project's manifest, as in a project made by `npm init koishi`.
  const dependencies = Object.fromEntries([
    ['@cordis-subagents/koishi-plugin-subagents', '*'], ...wrap.map((name) => [`koishi-plugin-cordis-${name}`, '*']),
  ])
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'koishi-console-form', private: true, dependencies })}\n`)
  linkModules(dir, wrap)
  // The console's package scanner resolves each package's manifest from its own folder (this repository's
  // node_modules), so the wrappers are found through NODE_PATH.
  const { child, done } = koishiStart(dir, 240_000, wrap.length ? { NODE_PATH: join(dir, 'node_modules') } : {})
  let out = ''
  child.stdout!.on('data', (chunk) => { out += chunk })
  const stdout = () => out
  const stop = async () => {
    const worker = /^WORKER (\d+)$/m.exec(out)
    if (worker) {
      try { process.kill(Number(worker[1]), 'SIGTERM') } catch { /* already gone */ }
    } else {
      child.kill('SIGKILL')
    }
    try {
      return await done
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    const url = await waitFor('console URL', () => /console webui is available at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], stdout, 90_000)
    await waitFor('worker pid', () => /^WORKER (\d+)$/m.exec(out)?.[1], stdout, 30_000)
    return { dir, url, stdout, stop }
  } catch (error) {
    await stop().catch(() => undefined)
    throw error
  }
}

export interface FormPage {
  browser: PlaywrightBrowser
  page: Page
  /** Console messages of type error and uncaught page errors. */
  errors: string[]
}

/** Chromium from npm (see browser.ts). */
export async function launchBrowser(): Promise<PlaywrightBrowser> {
  const binary = await testBrowser()
  const env = { ...process.env, ...binary.env }
  return chromium.launch({ executablePath: binary.executablePath, env, args: binary.args, headless: true })
}

/**
 * A page of the console that records console errors and uncaught page errors, opened on `path`; `prepare` sees the
 * page before it loads (routes, init scripts).
 */
export async function openPage(
  browser: PlaywrightBrowser, url: string, path: string, locale?: string, prepare?: (page: Page) => Promise<void>,
): Promise<{ page: Page, errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale })
  // The console's own language setting (its default is zh-CN).
  if (locale) {
    const config = JSON.stringify({ theme: { mode: 'light', dark: 'default-dark', light: 'default-light' }, locale })
    type Storage = { localStorage: { setItem(key: string, value: string): void } }
    await page.addInitScript((value) => (globalThis as unknown as Storage).localStorage.setItem('koishi.console.config', value), config)
  }
  const errors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => errors.push(error.message))
  await prepare?.(page)
  await page.goto(`${url}${path}`)
  return { page, errors }
}

/** Chromium on the config page of the entry `subagents`, its form rendered; `prepare` as for openPage. */
export async function openForm(url: string, prepare?: (page: Page) => Promise<void>): Promise<FormPage> {
  const browser = await launchBrowser()
  const { page, errors } = await openPage(browser, url, '/plugins/subagents', undefined, prepare)
  await field(page, 'subagent', 'toolName').waitFor({ timeout: 60_000 })
  return { browser, page, errors }
}

/** One field of the form, by its section and key (Koishi shows it as `section.key`). */
export function field(page: Page, section: string, key: string) {
  return fieldAt(page, `${section}.${key}`)
}

/** One field of the form by its whole path (`key`, `group.key`; Koishi shows it so in the field's title, a list's items as `key[0]`). */
export function fieldAt(page: Page, path: string) {
  const escaped = path.replaceAll('.', '\\.')
  return page.locator('.k-schema-item', { has: page.locator('.k-schema-left > h3', { hasText: new RegExp(`^${escaped}(?![\\w.[])`) }) })
}
