// `npm run screenshot:koishi-install`: writes packages/koishi-plugin-subagents/docs/install-{market,install,config,enabled}.png,
// the install from Koishi's market as a user sees it in the console (the same loopback registry, Koishi project and
// buttons as test/koishi-install.slow.spec.ts; test/support/koishi-install-flow.ts), with Noto Sans SC from npm
// served to the page for the console's Chinese labels. Fails when a step's text does not appear. Needs the Chromium
// from npm (linux-x64) or CHROMIUM_PATH.
import { join } from 'node:path'
import { installFlow } from '../test/support/koishi-install-flow.js'
import { ROOT } from '../test/helpers.js'

const written: string[] = []
const { errors } = await installFlow(async (step, page) => {
  const output = join(ROOT, `packages/koishi-plugin-subagents/docs/install-${step}.png`)
  await page.screenshot({ path: output })
  written.push(output)
  console.log(`wrote ${output}`)
})
if (written.length !== 4) throw new Error(`wrote ${written.length} pictures, not 4`)
// The market's full reload after the install (see KNOWN_MARKET_ERROR) restarts the console's server: the page's
// status socket fails to reconnect while it is down. Any other error in the page fails the script.
const reload = /^WebSocket connection to 'ws:\/\/127\.0\.0\.1:\d+\/status' failed: .*ERR_CONNECTION_REFUSED$/
const unexpected = errors.filter((error) => !reload.test(error))
if (unexpected.length) throw new Error(`the page logged errors:\n${unexpected.join('\n')}`)
