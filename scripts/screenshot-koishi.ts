// `npm run screenshot:koishi`: writes packages/koishi-plugin-subagents/docs/console-form.png, the market package's
// config form in the real Koishi console (the same project and browser as test/koishi-console-form.slow.spec.ts),
// scrolled to its first section, with Noto Sans SC from npm served to the page for the console's Chinese labels
// (test/support/cjk-font.ts). Needs the Chromium from npm (linux-x64) or CHROMIUM_PATH.
import { join } from 'node:path'
import { type CjkFont, serveCjkFont } from '../test/support/cjk-font.js'
import { openForm, startConsoleProject } from '../test/support/koishi-console.js'
import { ROOT } from '../test/helpers.js'

const OUTPUT = join(ROOT, 'packages/koishi-plugin-subagents/docs/console-form.png')

const project = await startConsoleProject()
try {
  let font: CjkFont | undefined
  const form = await openForm(project.url, async (page) => { font = await serveCjkFont(page) })
  try {
    const heading = form.page.locator('h2.k-schema-header').first()
    await heading.evaluate((element) => element.scrollIntoView())
    await font!.ready(form.page.locator('.k-schema-header', { hasText: '过滤器设置' }))
    await form.page.screenshot({ path: OUTPUT })
    if (form.errors.length) throw new Error(`the page logged errors:\n${form.errors.join('\n')}`)
    console.log(`wrote ${OUTPUT}`)
  } finally {
    await form.browser.close()
  }
} finally {
  await project.stop()
}
