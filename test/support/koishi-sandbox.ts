// Koishi's chat sandbox (@koishijs/plugin-sandbox) in the console, driven in Chromium: its first user, a message
// typed and sent, the texts of the messages shown. Used by koishi-chat-flow.ts and scripts/screenshot-chatluna.ts.
import type { Page } from 'playwright-core'

export interface SandboxChat {
  /** The list of messages (the screenshot scripts take its picture). */
  messages: ReturnType<Page['locator']>
  /** Types `text` into the chat's input and sends it. */
  say(text: string): Promise<void>
  /** The text of every message shown, in order. */
  texts(): Promise<string[]>
}

/** Picks the sandbox's first user (the page is on `/sandbox`) and returns its chat. */
export async function sandboxChat(page: Page): Promise<SandboxChat> {
  await page.locator('.card-header.k-tab-menu-item').click({ timeout: 60_000 })
  const messages = page.locator('.layout-main .virtual-list-wrapper')
  return {
    messages,
    async say(text) {
      await page.locator('.card-footer .textarea, .card-footer textarea, .card-footer [contenteditable]').first().click()
      await page.keyboard.type(text)
      await page.keyboard.press('Enter')
    },
    texts: async () => (await messages.locator('.message .content, .message-content, .content').allInnerTexts()).map((text) => text.trim()),
  }
}
