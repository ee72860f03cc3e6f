// Loaded with `node --import` before the MCP conformance CLI on Node < 22: its bundle imports
// `globSync` from `fs` (Node 22), which only its `tier-check` command uses. The hook hands the CLI
// (and only it) a module with every export of node:fs plus a globSync that says what it needs.
import { register } from 'node:module'

if (Number(process.versions.node.split('.')[0]) < 22) register('./node20-hooks.mjs', import.meta.url)
