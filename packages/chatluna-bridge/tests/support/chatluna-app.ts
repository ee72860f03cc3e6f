// The plugins both ChatLuna app fixtures load (tests/fixtures/chat-app.ts, console-app.ts): ChatLuna 1.3.36 in agent
// mode (`defaultChatMode: plugin`) on the loopback adapter over a scripted model server, our tools, runtime, service,
// the spawn provider and the `subagent` tool, and the bridge, with the children on ChatLuna's `loopback/m1`.
import { createRequire } from 'node:module'
import type { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import { eventually } from '@cordis-subagents/test-support'
import * as bridge from '@cordis-subagents/koishi-plugin-chatluna-subagents'
import { loopbackAdapter } from './loopback-adapter.js'

const require = createRequire(import.meta.url)

/** Loads ChatLuna, its loopback adapter (models from `endpoint`) and our delegation plugins into `app`. */
export function loadChatlunaDelegation(app: Context, endpoint: string): void {
  app.plugin(require('koishi-plugin-chatluna') as never, {
    defaultModel: 'loopback/m1', defaultChatMode: 'plugin', allowPrivate: true, privateChatWithoutCommand: true, autoCreateRoomFromUser: true,
    messageQueue: false, sendThinkingMessage: false, outputMode: 'raw', splitMessage: false, streamResponse: false, isLog: false,
  })
  app.plugin(loopbackAdapter as never, { platform: 'loopback', endpoint, models: ['m1'], configMode: 'default', maxRetries: 1 })
  app.plugin(ToolRegistry)
  app.plugin(AgentRuntime, { model: 'chatluna:loopback/m1' })
  app.plugin(SubagentService)
  app.plugin(spawn, { name: 'spawn' })
  app.plugin(subagentTool, { provider: 'spawn', toolName: 'subagent' })
  app.plugin(bridge, { model: 'chatluna:loopback/m1' } as bridge.Config)
}

/** Resolves once ChatLuna lists the loopback model (after `app.start()`). */
export function chatlunaReady(app: Context): Promise<unknown> {
  const chatluna = (app as unknown as { chatluna?: { platform: { findModel(name: string): { value: unknown } } } })
  return eventually(() => chatluna.chatluna?.platform.findModel('loopback/m1').value, 'ChatLuna lists loopback/m1')
}
