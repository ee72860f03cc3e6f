#!/usr/bin/env node
// The quick start's ACP agent is configuration (acp-agent.yml, served by @cordis-subagents/serve-acp's
// bin). This file only keeps `node lib/acp-agent.js` working for clients configured with that command.
import { fileURLToPath } from 'node:url'

process.argv.splice(2, process.argv.length - 2, fileURLToPath(new URL('../acp-agent.yml', import.meta.url)))
await import('@cordis-subagents/serve-acp/bin')
