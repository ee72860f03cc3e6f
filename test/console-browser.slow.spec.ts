// The live delegation view (packages/console) in a real browser: the Chromium from npm (or CHROMIUM_PATH,
// test/support/browser.ts) driven by playwright-core, against the quick start run with --view, as a person uses it.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { buildQuickstart, type Cli, offlineEnv, ROOT, runCli } from './helpers.js'
import { call } from '../packages/console/tests/helpers.js'
import { testBrowser } from './support/browser.js'

const ARTIFACTS = join(ROOT, 'test-artifacts')

/** Starts the quick start with --view and waits for the URL it prints (stderr). */
async function startWithView(args: string[], delay: number): Promise<{ cli: Cli; url: string; port: number; token: string }> {
  const cli = runCli(['--view', ...args], offlineEnv({ QUICKSTART_DEMO_DELAY: String(delay) }))
  for (let waited = 0; waited < 30_000; waited += 50) {
    const match = /view: (http:\/\/127\.0\.0\.1:(\d+)\/#token=(\S+))/.exec(cli.stderr())
    if (match) return { cli, url: match[1], port: Number(match[2]), token: match[3] }
    if (cli.child.exitCode !== null) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  cli.child.kill('SIGKILL')
  throw new Error(`no view URL from the quick start; stderr:\n${cli.stderr()}`)
}

/** Ctrl-C, as a person ends it; the process must exit cleanly. */
async function stop(cli: Cli | undefined): Promise<void> {
  if (!cli || cli.child.exitCode !== null) return
  cli.child.kill('SIGINT')
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), 15_000)
  await cli.exited
  clearTimeout(timer)
}

const node = (page: Page, label: string) => page.locator('li.node', { has: page.locator(':scope > .row .label', { hasText: label }) })

describe('console in a real browser (chromium + playwright-core) during the quick start demo', function () {
  this.timeout(90_000)
  let browser: BrowserContext | undefined
  let profile: string | undefined
  let cli: Cli | undefined

  before(async () => {
    const chromiumBinary = await testBrowser()
    buildQuickstart()
    mkdirSync(ARTIFACTS, { recursive: true })
    profile = mkdtempSync(join(tmpdir(), 'console-chromium-'))
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumBinary.executablePath,
      env: { ...process.env, ...chromiumBinary.env },
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: chromiumBinary.args,
    })
  })

  afterEach(async function () {
    const page = browser?.pages()[0]
    if (this.currentTest?.state === 'failed' && page) await page.screenshot({ path: join(ARTIFACTS, `console-failed-${Date.now()}.png`) }).catch(() => {})
    await stop(cli)
    cli = undefined
  })

  after(async () => {
    await browser?.close()
    if (profile) rmSync(profile, { recursive: true, force: true })
  })

  it('shows the four children of the demo appear, run and end completed; a child opens its transcript', async () => {
    const view = await startWithView([], 500)
    cli = view.cli
    const page = browser!.pages()[0] ?? await browser!.newPage()
    await page.goto(view.url)
    await page.waitForSelector('#status[data-status="live"]', { timeout: 15_000 })
    // The token left the address bar once the page read it.
    expect(page.url()).to.not.include('token')
    const children = page.locator('li.node[data-depth="1"]')
    await page.waitForSelector('li.node[data-depth="1"][data-state="running"]', { timeout: 30_000 })
    await page.waitForFunction(() => (globalThis as unknown as { document: { querySelectorAll(selector: string): { length: number } } })
      .document.querySelectorAll('li.node[data-depth="1"][data-stop-reason="completed"]').length === 4, undefined, { timeout: 45_000 })
    const seen = await children.evaluateAll((els) => els.map((el) => `${el.getAttribute('data-transport')}:${el.querySelector('.label')!.textContent}`))
    expect(seen.sort()).to.deep.equal([
      'a2a:Workspace top level (remote, over A2A)',
      'acp:Root workspace scripts (separate process)',
      'spawn:Summarize packages, part 1 of 2',
      'spawn:Summarize packages, part 2 of 2',
    ])
    const part1 = node(page, 'Summarize packages, part 1 of 2')
    expect(await part1.locator(':scope > .row .counts').textContent()).to.match(/^2 steps · \d+ tool calls · [1-9]\d* tokens$/)
    expect(await part1.locator(':scope > .budget').textContent()).to.include('steps per turn 2/12')
    await part1.locator(':scope > .actions .open').click()
    const entries = part1.locator(':scope > .transcript .entries li')
    await entries.first().waitFor({ timeout: 10_000 })
    const kinds = await entries.evaluateAll((els) => els.map((el) => el.getAttribute('data-kind')))
    expect(kinds[0]).to.equal('user')
    expect(kinds).to.include('tool-call')
    expect(kinds).to.include('tool-result')
    expect(await part1.locator(':scope > .transcript .entries').textContent()).to.include('read_file')
    await page.waitForSelector('li.node[data-depth="0"][data-stop-reason="completed"]', { timeout: 20_000 })
    await page.screenshot({ path: join(ARTIFACTS, 'console-demo.png'), fullPage: true })
  })

  it('cancels a running background child from the page: the tree shows aborted, the other child completes', async () => {
    const view = await startWithView(['--background'], 1500)
    cli = view.cli
    const page = browser!.pages()[0] ?? await browser!.newPage()
    await page.goto(view.url)
    const part1 = node(page, 'Background summary, part 1 of 2')
    await part1.and(page.locator('[data-state="running"][data-background="true"]')).waitFor({ timeout: 30_000 })
    await part1.locator(':scope > .actions .cancel').click()
    await part1.and(page.locator('[data-stop-reason="aborted"]')).waitFor({ timeout: 20_000 })
    expect(await part1.locator(':scope > .why').textContent()).to.match(/^aborted: cancelled from the console/)
    // An ended child offers no cancel and no message box.
    await part1.locator(':scope > .actions .cancel').waitFor({ state: 'hidden', timeout: 5_000 })
    expect(await part1.locator(':scope > .actions .send').isVisible()).to.equal(false)
    await node(page, 'Background summary, part 2 of 2').and(page.locator('[data-stop-reason="completed"]')).waitFor({ timeout: 30_000 })
    await page.screenshot({ path: join(ARTIFACTS, 'console-cancelled.png'), fullPage: true })

    // The API refuses a request without the token, and one with a foreign Host (DNS rebinding).
    expect((await call(view.port, '/api/snapshot')).status).to.equal(401)
    expect((await call(view.port, '/api/snapshot', { headers: { authorization: `Bearer ${view.token}`, host: `rebind.example:${view.port}` } })).status).to.equal(403)
    expect((await call(view.port, '/api/snapshot', { headers: { authorization: `Bearer ${view.token}` } })).status).to.equal(200)
  })
})
