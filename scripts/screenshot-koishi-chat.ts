// `npm run screenshot:koishi-chat`: writes packages/koishi-plugin-subagents/docs/chat-asked.png and chat-answered.png,
// the chat in Koishi's console sandbox while a child's question waits and after the user answered it (the same
// flow as test/koishi-chat-shots.slow.spec.ts). Needs the Chromium from npm (linux-x64) or CHROMIUM_PATH.
import { join } from 'node:path'
import { chatFlow } from '../test/support/koishi-chat-flow.js'
import { ROOT } from '../test/helpers.js'

const { errors } = await chatFlow(async (step, page) => {
  const output = join(ROOT, `packages/koishi-plugin-subagents/docs/chat-${step}.png`)
  await page.locator('.layout-main .virtual-list-wrapper').screenshot({ path: output })
  console.log(`wrote ${output}`)
})
if (errors.length) throw new Error(`the page logged errors:\n${errors.join('\n')}`)
