// Each cordis package's config form on its own in the real Koishi console (plugin-console, plugin-config,
// plugin-market from npm, under `koishi start`, in Chromium from npm): every package a Koishi package can compose
// (subagent-tool, the providers, checkpoints, the serve-* packages) is wrapped as `koishi-plugin-cordis-<folder>`
// (test/support/koishi-console.ts) and loaded from test/fixtures/koishi-console-schemas/koishi.yml. Each form
// renders every field of its schema, nested groups included, with no error in the page; a change saved through
// subagent-tool's form (a nested field too) reloads the running tool and is written to koishi.yml, and one saved
// through a form of a plugin that is off is written there too.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Schema } from 'cordis'
import { expect } from 'chai'
import type { Browser } from 'playwright-core'
import { eventually } from '@cordis-subagents/test-support'
import { type ConsoleProject, fieldAt, launchBrowser, openPage, startConsoleProject } from './support/koishi-console.js'
import { ROOT } from './helpers.js'

/** Folder name and the entry id of its form in the fixture's koishi.yml. */
const FORMS = [
  ['subagent-tool', 'tool'], ['provider-acp', 'acp'], ['provider-a2a', 'a2a'], ['checkpoints', 'checkpoints'],
  ['serve-a2a', 'serve-a2a'], ['serve-acp', 'serve-acp'], ['serve-mcp', 'serve-mcp'],
] as const

/** The title of every field the form shows: a nested object's fields as `group.key`, the group itself too. */
function fieldPaths(schema: Schema, prefix = ''): string[] {
  const paths: string[] = []
  for (const [key, item] of Object.entries(schema.dict ?? {})) {
    if (item.meta.hidden) continue
    const path = `${prefix}${key}`
    const group = groupOf(item)
    if (group) {
      // A group shown as its own item (a group that may be left unset) has a title; a plain one, a heading.
      if (item.type !== 'object') paths.push(path)
      paths.push(...fieldPaths(group, `${path}.`))
    } else {
      paths.push(path)
    }
  }
  return paths
}

/** The object a field holds fields of: the object itself, or the one choice of a union around it. */
function groupOf(item: Schema): Schema | undefined {
  if (item.type === 'object') return item
  if (item.type === 'union' && item.list!.length === 1 && item.list![0].type === 'object') return item.list![0]
}

describe('the cordis packages\' forms, each on its own, in the real Koishi console (chromium)', function () {
  this.timeout(300_000)
  let project: ConsoleProject | undefined
  let browser: Browser | undefined

  before(async () => {
    const folders = FORMS.map(([folder]) => folder)
    project = await startConsoleProject({
      yml: join(ROOT, 'test/fixtures/koishi-console-schemas/koishi.yml'),
      build: [...folders, 'tools', 'agent', 'subagents-service', 'provider-spawn'],
      wrap: folders,
    })
    browser = await launchBrowser()
  })

  after(async () => {
    await browser?.close()
    if (project) await project.stop()
  })

  for (const [folder, id] of FORMS) {
    it(`${folder}: renders every field of its schema, nested ones too, with no error in the page`, async () => {
      const { Config } = await import(`@cordis-subagents/${folder}`) as { Config: Schema }
      const paths = fieldPaths(Config)
      expect(paths.length).to.be.greaterThan(3)
      const { page, errors } = await openPage(browser!, project!.url, `/plugins/${id}`)
      try {
        await fieldAt(page, paths[0]).waitFor({ timeout: 60_000 })
        // The last field renders after every group before it did.
        await fieldAt(page, paths.at(-1)!).waitFor({ timeout: 30_000 })
        const missing: string[] = []
        for (const path of paths) if (await fieldAt(page, path).count() !== 1) missing.push(path)
        expect(missing, `fields not shown once: ${missing.join(', ')}`).to.deep.equal([])
        expect(errors, errors.join('\n')).to.deep.equal([])
      } finally {
        await page.close()
      }
    })
  }

  it('subagent-tool: a change saved through the form (a nested field too) reloads the running tool and is written to koishi.yml', async () => {
    const { page, errors } = await openPage(browser!, project!.url, '/plugins/tool')
    try {
      await fieldAt(page, 'budget.maxSteps').waitFor({ timeout: 60_000 })
      expect(project!.stdout()).to.include('TOOLS ["subagent"]')
      await fieldAt(page, 'toolName').locator('input').fill('delegate')
      await fieldAt(page, 'budget.maxSteps').locator('input').fill('7')
      await page.locator('.menu-item:has(svg.k-icon.check)').click()
      await eventually(() => project!.stdout().includes('TOOLS ["delegate"]'), 'the tool reloaded with the saved name', 60_000)
      await eventually(() => /tool:\n\s+provider: spawn\n\s+toolName: delegate\n\s+budget:\n\s+maxSteps: 7\n/.test(readFileSync(join(project!.dir, 'koishi.yml'), 'utf8')),
        'koishi.yml written', 30_000)
      // Nothing the form filled in for the groups left untouched is written.
      expect(readFileSync(join(project!.dir, 'koishi.yml'), 'utf8')).to.not.match(/agentOptions|toolFilter|output:/)
      expect(errors, errors.join('\n')).to.deep.equal([])
    } finally {
      await page.close()
    }
  })

  it('provider-a2a (off): a change saved through its form is written to koishi.yml and the plugin stays off', async () => {
    const { page, errors } = await openPage(browser!, project!.url, '/plugins/a2a')
    try {
      await fieldAt(page, 'urls').waitFor({ timeout: 60_000 })
      await fieldAt(page, 'name').locator('input').fill('remote')
      // The console's menu of a plugin that is off: enable, then save (its reload button while it is on).
      expect(await page.locator('.menu-item:has(svg.k-icon.check)').count()).to.equal(0)
      await page.locator('.menu-item').nth(1).click()
      await eventually(() => /~cordis-provider-a2a:a2a:\n\s+url: http:\/\/127\.0\.0\.1:9\/\n\s+name: remote\n/.test(readFileSync(join(project!.dir, 'koishi.yml'), 'utf8')),
        'koishi.yml written', 30_000)
      expect(project!.stdout()).to.not.include('apply plugin cordis-provider-a2a')
      expect(errors, errors.join('\n')).to.deep.equal([])
    } finally {
      await page.close()
    }
  })

  it('stops cleanly: Koishi exits 0 on SIGTERM, with no error logged', async () => {
    await browser!.close()
    browser = undefined
    const run = await project!.stop()
    project = undefined
    expect(run.code, run.stdout).to.equal(0)
    expect(run.stdout.split('\n').filter((line) => line.includes('[E]'))).to.deep.equal([])
  })
})
