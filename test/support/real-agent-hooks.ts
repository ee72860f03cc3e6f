// One real adapter and its app per test: whatever a test started is stopped after it (mocha hooks).
import type { Script } from './fake-model-server.js'
import { type AdapterName, type AgentOptions, type RealAgent, startRealAgent } from './real-agents.js'
import { type AppOptions, type RealAgentApp, startRealAgentApp } from './real-agent-app.js'

export interface RealAgentHooks {
  /** Starts the adapter's fake model and home (before the app, so a test can put files in the home). */
  agent(name: AdapterName, script: Script, options?: AgentOptions): Promise<RealAgent>
  /** Starts the app around the agent started last. */
  app(options?: AppOptions): Promise<RealAgentApp>
}

export function useRealAgent(): RealAgentHooks {
  let agent: RealAgent | undefined
  let host: RealAgentApp | undefined
  afterEach(async () => {
    await host?.stop()
    await agent?.close()
    host = agent = undefined
  })
  return {
    async agent(name, script, options) {
      agent = await startRealAgent(name, script, options)
      return agent
    },
    async app(options) {
      if (!agent) throw new Error('start the agent first')
      host = await startRealAgentApp(agent, options)
      return host
    },
  }
}
