// `npm run screenshot:koishi`: writes packages/koishi-plugin-subagents/docs/console-form.png, the market package's
// config form in the real Koishi console (the same project and browser as test/koishi-console-form.slow.spec.ts),
// scrolled to its first section. Needs the Chromium from npm (linux-x64) or CHROMIUM_PATH.
import { join } from 'node:path'
import { openForm, startConsoleProject } from '../test/support/koishi-console.js'
import { ROOT } from '../test/helpers.js'

const OUTPUT = join(ROOT, 'packages/koishi-plugin-subagents/docs/console-form.png')

const project = await startConsoleProject()
try {
  const form = await openForm(project.url)
  try {
    await form.page.locator('h2.k-schema-header').first().evaluate((heading) => heading.scrollIntoView())
    await form.page.screenshot({ path: OUTPUT })
    if (form.errors.length) throw new Error(`the page logged errors:\n${form.errors.join('\n')}`)
    console.log(`wrote ${OUTPUT}`)
  } finally {
    await form.browser.close()
  }
} finally {
  await project.stop()
}
