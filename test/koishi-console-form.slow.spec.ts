// The market package's config form in the real Koishi console: @koishijs/plugin-console, plugin-config (the
// plugin config page) and plugin-market from npm, under `koishi start`, driven by Chromium from npm
// (support/koishi-console.ts). The form renders every section with no error in the page; a change saved
// through the form reloads the running plugin (fixtures/koishi-console-form/watch.cjs prints the tools) and
// is written to koishi.yml; the app then stops cleanly.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import { Config } from '@cordis-subagents/koishi-plugin-subagents'
import { type ConsoleProject, field, type FormPage, openForm, startConsoleProject } from './support/koishi-console.js'
import { expectCleanStop } from './support/koishi-stop.js'

describe('koishi-plugin-subagents: its form in the real Koishi console (chromium)', function () {
  this.timeout(240_000)
  let project: ConsoleProject | undefined
  let form: FormPage | undefined

  before(async () => {
    project = await startConsoleProject()
    form = await openForm(project.url)
  })

  after(async () => {
    await form?.browser.close()
    if (project) await project.stop()
  })

  it('renders every section with its fields (the API key as a password field; a section that is off shows its switch only), with no error in the page', async () => {
    const { page, errors } = form!
    const titles = (Config as unknown as { list: { meta: { description: string } }[] }).list.map((section) => section.meta.description)
    expect(titles).to.have.length(13)
    const headings = await page.locator('h2.k-schema-header').allTextContents()
    for (const title of titles) expect(headings.map((text) => text.trim())).to.include(title)
    for (const [section, key] of [['model', 'enabled'], ['model', 'baseURL'], ['agents', 'maxSteps'], ['tools', 'maxResultBytes'],
      ['subagents', 'maxDepth'], ['spawn', 'maxParkedMs'], ['subagent', 'toolName'], ['subagent', 'persona'], ['fork', 'toolName'],
      ['acp', 'enabled'], ['a2a', 'enabled'], ['checkpoints', 'enabled'], ['liveView', 'enabled'], ['chat', 'enabled'], ['consolePage', 'enabled']]) {
      expect(await field(page, section, key).count(), `${section}.${key}`).to.equal(1)
    }
    for (const [section, key] of [['acp', 'command'], ['a2a', 'url'], ['liveView', 'port']]) {
      expect(await field(page, section, key).count(), `${section}.${key} (section off)`).to.equal(0)
    }
    expect(await field(page, 'model', 'apiKey').locator('input[type="password"]').count()).to.equal(1)
    // The value koishi.yml gave is in the form.
    expect(await field(page, 'model', 'baseURL').locator('input').inputValue()).to.equal('http://127.0.0.1:9/v1')
    expect(errors, JSON.stringify(errors)).to.deep.equal([])
  })

  it('a change saved through the form reloads the running plugin with it and is written to koishi.yml', async () => {
    const { page, errors } = form!
    expect(project!.stdout()).to.include('TOOLS ["subagent","subagent_fork"]')
    await field(page, 'subagent', 'toolName').locator('input').fill('delegate')
    await page.locator('.menu-item:has(svg.k-icon.check)').click()
    await eventually(() => project!.stdout().includes('TOOLS ["delegate","subagent_fork"]'), 'the plugin reloaded with the saved tool name', 60_000)
    expect(project!.stdout()).to.include('reload plugin @cordis-subagents/subagents:subagents')
    await eventually(() => /subagent:\n\s+toolName: delegate\n/.test(readFileSync(join(project!.dir, 'koishi.yml'), 'utf8')), 'koishi.yml written', 30_000)
    // The groups subagent-tool leaves unset (shown empty, untouched) are not written.
    expect(readFileSync(join(project!.dir, 'koishi.yml'), 'utf8')).to.not.match(/agentOptions|toolFilter|budget:|output:/)
    expect(errors).to.deep.equal([])
  })

  it('stops cleanly: Koishi exits 0 on SIGTERM, with no error logged by the plugin', async () => {
    await form!.browser.close()
    form = undefined
    const run = await project!.stop()
    project = undefined
    expectCleanStop(run)
  })
})
