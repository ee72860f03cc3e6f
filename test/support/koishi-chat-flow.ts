// The chat flow as a person sees it in Koishi's console: its chat sandbox (@koishijs/plugin-sandbox) under
// `koishi start` (test/fixtures/koishi-chat-shots/koishi.yml), the delegation chain with koishi-chat, and a
// scripted model on a loopback server (the far edge): a user sends `subagents.run <task>`, the root delegates, the
// child asks a question, the question is posted in the chat, the user answers there, the child finishes and the
// answer is posted. Shared by test/koishi-chat-shots.slow.spec.ts and scripts/screenshot-koishi-chat.ts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { type ChatMessage, chatModelServer, type ScriptReply } from '../../packages/koishi-chat/tests/support/chat-model-server.js'
import { launchBrowser, openPage, startConsoleProject } from './koishi-console.js'
import { sandboxChat } from './koishi-sandbox.js'
import { ROOT } from '../helpers.js'

export const TASK = 'release-7'
export const ANSWER = 'eu-west'

/** The root delegates the task; the child asks which region, then reports the answer it got; the root reports it. */
function script(messages: ChatMessage[]): ScriptReply {
  const task = String(messages.find((m) => m.role === 'user')?.content ?? '')
  const results = messages.filter((m) => m.role === 'tool').map((m) => String(m.content))
  if (task.startsWith('Deploy ')) {
    if (!results.length) return { tool: 'ask_parent', input: { question: `Which region for ${task.slice(7)}: eu-west or us-east?` } }
    return { text: `deployed ${task.slice(7)} to ${results.at(-1)}` }
  }
  if (!results.length) return { tool: 'subagent', input: { description: `deploy ${task}`, prompt: `Deploy ${task}` } }
  return { text: `Done: ${results.at(-1)}` }
}

export interface ChatStep {
  name: 'asked' | 'answered'
  /** The text of every message in the chat, in order. */
  messages: string[]
}

/** Runs the flow; `shoot` sees the page after each step (the screenshot script writes it). */
export async function chatFlow(shoot?: (step: ChatStep['name'], page: Page) => Promise<void>): Promise<{ steps: ChatStep[], errors: string[] }> {
  const model = await chatModelServer(script)
  const dir = mkdtempSync(join(tmpdir(), 'koishi-chat-shots-'))
  const yml = join(dir, 'koishi.yml')
  writeFileSync(yml, readFileSync(join(ROOT, 'test/fixtures/koishi-chat-shots/koishi.yml'), 'utf8').replaceAll('__BASE_URL__', model.baseURL))
  try {
    const project = await startConsoleProject({
      yml, build: ['tools', 'agent', 'model-openai', 'subagents-service', 'provider-spawn', 'subagent-tool', 'koishi-chat'],
    })
    try {
      const browser = await launchBrowser()
      try {
        const { page, errors } = await openPage(browser, project.url, '/sandbox', 'en-US')
        // The sandbox's first user, then a message from them.
        const { messages, say, texts } = await sandboxChat(page)
        const steps: ChatStep[] = []
        await say(`subagents.run ${TASK}`)
        await messages.getByText(`Which region for ${TASK}`).waitFor({ timeout: 60_000 })
        steps.push({ name: 'asked', messages: await texts() })
        await shoot?.('asked', page)
        // Tags start at a random number per process (koishi-chat README, "Questions"): the one posted is answered.
        const tag = /\[(q\d+)\]/.exec(steps[0]!.messages.join('\n'))?.[1]
        if (!tag) throw new Error(`no question tag in the chat: ${JSON.stringify(steps[0]!.messages)}`)
        await say(`subagents.answer ${tag} ${ANSWER}`)
        await messages.getByText(`Done: deployed ${TASK} to ${ANSWER}`).waitFor({ timeout: 60_000 })
        steps.push({ name: 'answered', messages: await texts() })
        await shoot?.('answered', page)
        return { steps, errors }
      } finally {
        await browser.close()
      }
    } finally {
      await project.stop()
    }
  } finally {
    await model.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
