// `npm run screenshot:chatluna`: writes packages/chatluna-bridge/docs/chatluna-delegates.png, ChatLuna's agent
// delegating to our child in Koishi's console: packages/chatluna-bridge/tests/fixtures/console-app.ts (ChatLuna 1.3.36
// from npm in agent mode on a loopback model, our tools and the bridge, the console and its chat sandbox) in a child
// process, the sandbox in Chromium. A person asks in the chat; the script waits for the child's end (`END
// spawn:1:completed` from the app) and for ChatLuna's reply carrying the child's answer, and fails when either does
// not appear. Needs the Chromium from npm (linux-x64) or CHROMIUM_PATH.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { eventually } from '@cordis-subagents/test-support'
import { CHILD_ANSWER, QUESTION, REPLY_PREFIX } from '../packages/chatluna-bridge/tests/support/console-story.js'
import { type CjkFont, serveCjkFont } from '../test/support/cjk-font.js'
import { launchBrowser, openPage } from '../test/support/koishi-console.js'
import { sandboxChat } from '../test/support/koishi-sandbox.js'
import { offlineEnv, ROOT } from '../test/helpers.js'

const OUTPUT = join(ROOT, 'packages/chatluna-bridge/docs/chatluna-delegates.png')
const APP = join(ROOT, 'packages/chatluna-bridge/tests/fixtures/console-app.ts')

const app = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', '--no-experimental-require-module', APP],
  { cwd: ROOT, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
let out = ''
app.stdout.on('data', (chunk) => { out += chunk })
app.stderr.on('data', (chunk) => { out += chunk })
const exited = new Promise<number | null>((resolve) => app.on('exit', (code) => resolve(code)))
try {
  await eventually(() => /^CONSOLE /m.test(out) || app.exitCode !== null, 'the app\'s console', 120_000)
  const url = /^CONSOLE (\S+)$/m.exec(out)?.[1]
  if (!url) throw new Error(`the app did not start:\n${out}`)
  const browser = await launchBrowser()
  try {
    let font: CjkFont | undefined
    const { page, errors } = await openPage(browser, url, '/sandbox', 'en-US', async (page) => { font = await serveCjkFont(page) })
    const chat = await sandboxChat(page)
    await chat.say(QUESTION)
    await eventually(() => out.includes('END spawn:1:completed'), `the child's end (the app printed:\n${out})`, 60_000)
    const reply = chat.messages.getByText(`${REPLY_PREFIX} ${CHILD_ANSWER}`)
    await reply.waitFor({ timeout: 60_000 })
    await font!.ready(reply)
    const texts = await chat.texts()
    if (texts.length !== 2 || texts[0] !== QUESTION) throw new Error(`the chat shows ${JSON.stringify(texts)}, not the question and one reply`)
    await chat.messages.screenshot({ path: OUTPUT })
    if (errors.length) throw new Error(`the page logged errors:\n${errors.join('\n')}`)
    console.log(`wrote ${OUTPUT}`)
  } finally {
    await browser.close()
  }
} finally {
  app.kill('SIGTERM')
  const code = await exited
  if (code !== 0) console.log(`the app exited ${code}:\n${out}`)
}
