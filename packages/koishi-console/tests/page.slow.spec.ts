// The page in Koishi's console, in a real browser (the Chromium of test/support/browser.ts, driven by
// playwright-core), against a real Koishi project (`koishi start`, tests/koishi-project.ts) with the
// console from npm: the page in the console's sidebar, a running tree, a transcript, a parked child's
// question answered from the page (the run resumes), cancel, and a child's markup shown as text.
// `SCREENSHOT=update` also writes docs/screenshot.png (`npm run screenshot -w @cordis-subagents/koishi-console`).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core'
import { eventually } from '@cordis-subagents/test-support'
import { testBrowser } from '../../../test/support/browser.js'
import { ROOT } from '../../../test/helpers.js'
import { ConsoleClient } from './console-client.js'
import { type Project, startProject } from './koishi-project.js'

const ARTIFACTS = join(ROOT, 'test-artifacts')
const SCREENSHOT = join(ROOT, 'packages/koishi-console/docs/screenshot.png')

interface Ended { scenario: string; stopReason?: string; text?: string }

describe('koishi-console: the page in Koishi\'s console, in a real browser', function () {
  this.timeout(180_000)
  let project: Project | undefined
  let browser: BrowserContext | undefined
  let profile: string | undefined
  let client: ConsoleClient | undefined
  let page: Page
  const errors: string[] = []

  before(async () => {
    const binary = await testBrowser()
    project = await startProject()
    client = await ConsoleClient.open(project.ws)
    mkdirSync(ARTIFACTS, { recursive: true })
    profile = mkdtempSync(join(tmpdir(), 'koishi-console-chromium-'))
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: binary.executablePath, env: { ...process.env, ...binary.env }, headless: true,
      viewport: { width: 1280, height: 860 }, args: binary.args,
    })
    page = browser.pages()[0] ?? await browser.newPage()
    page.on('pageerror', (error) => errors.push(error.message))
    page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  })

  afterEach(async function () {
    if (this.currentTest?.state === 'failed') console.error('page errors:', errors)
    if (this.currentTest?.state === 'failed') await page.screenshot({ path: join(ARTIFACTS, `koishi-console-failed-${Date.now()}.png`) }).catch(() => {})
  })

  after(async () => {
    client?.close()
    await browser?.close()
    if (profile) rmSync(profile, { recursive: true, force: true })
    const run = await project?.stop()
    expect(`${run?.stdout}\n${run?.stderr}`, 'no error logged').to.not.match(/\[E\]|cannot resolve plugin/)
  })

  const node = (label: string): Locator => page.locator('li.node', { has: page.locator(':scope > .row .label', { hasText: new RegExp(`^${label}$`) }) })
  const ended = (scenario: string) => eventually(async () => ((await client!.call('fixture/results')).value as Ended[]).find((run) => run.scenario === scenario), `${scenario} ended`)

  it('is in the console\'s sidebar, shows a running tree, opens a transcript, and cancels a held child', async () => {
    await page.goto(project!.url)
    // The console's activity bar links the page; clicking it opens it.
    await page.locator('.activity-item a.activity-button[href="/subagents"]').click({ timeout: 30_000 })
    await page.waitForURL(/\/subagents$/)
    await page.locator('.subagents .empty').waitFor({ timeout: 10_000 })

    await client!.call('fixture/start', 'held')
    const held = node('held child')
    await held.and(page.locator('[data-state="running"][data-transport="spawn"]')).waitFor({ timeout: 20_000 })
    await node('held').and(page.locator('[data-depth="0"][data-transport="root"]')).waitFor()
    await held.locator(':scope > .progress', { hasText: 'lookup returned' }).waitFor()
    expect(await held.locator(':scope > .row .counts').textContent()).to.match(/^\d+ steps · 1 tool calls · \d+ tokens$/)

    await held.locator(':scope > .actions .open').click()
    const entries = held.locator(':scope > .transcript .entries li')
    await entries.nth(2).waitFor({ timeout: 10_000 })
    expect(await entries.evaluateAll((els) => els.map((el) => el.getAttribute('data-kind')))).to.deep.equal(['user', 'tool-call', 'tool-result'])
    expect(await entries.nth(2).textContent()).to.include('found hold')

    await held.locator(':scope > .actions .cancel').click()
    await held.and(page.locator('[data-stop-reason="aborted"]')).waitFor({ timeout: 20_000 })
    expect(await held.locator(':scope > .why').textContent()).to.match(/^aborted: cancelled from the console/)
    await held.locator(':scope > .actions .cancel').waitFor({ state: 'detached', timeout: 5_000 })
    expect(await ended('held')).to.include({ stopReason: 'completed' })
    await node('held').and(page.locator('[data-stop-reason="completed"]')).waitFor({ timeout: 20_000 })
  })

  it('answers a parked child\'s question from the page: the run resumes; its markup output is shown as text', async () => {
    await client!.call('fixture/start', 'ask')
    const painter = node('painter')
    const question = painter.locator(':scope > .question')
    await question.waitFor({ timeout: 20_000 })
    expect(await question.locator('.question-text').textContent()).to.include('Which colour?')
    await question.locator('.answer-text').fill('blue')
    if (process.env.SCREENSHOT === 'update') await page.screenshot({ path: SCREENSHOT })
    await question.locator('.answer').click()
    // Answered: the question goes, the child works on (running) until the fixture lets it finish.
    await question.waitFor({ state: 'detached', timeout: 20_000 })
    expect(await painter.getAttribute('data-state')).to.equal('running')
    await client!.call('fixture/gate')
    expect((await ended('ask')).text).to.match(/^Root: painted blue </)
    await painter.and(page.locator('[data-stop-reason="completed"]')).waitFor({ timeout: 20_000 })

    // A child's output with <script>, an <img onerror> and <b> is text on the page: nothing of it ran or became an element.
    const output = painter.locator(':scope > .output')
    expect(await output.textContent()).to.include('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold?</b>')
    expect(await output.locator('script, img, b').count()).to.equal(0)
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).to.equal(undefined)
    await page.screenshot({ path: join(ARTIFACTS, 'koishi-console.png') })
  })
})
