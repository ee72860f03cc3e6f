// Which scenarios of the MCP conformance suite apply to our MCP client (@cordis-subagents/mcp) and our
// served MCP server (@cordis-subagents/serve-mcp), and why the others do not. A scenario the suite lists
// that is in neither list fails the conformance spec until it is classified here.

export type Side = 'client' | 'server'

/** Scenarios that apply: they run, and every check of theirs must pass (timing checks aside, see TIMING_CHECKS). */
export const APPLIES: Record<Side, readonly string[]> = {
  client: ['initialize', 'tools_call', 'sse-retry'],
  server: ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'],
}

/** Checks about wall-clock margins: reported, never asserted (a loaded machine moves them). */
export const TIMING_CHECKS = new Set(['client-sse-retry-timing'])

const FIXTURE_TOOL = 'calls a fixture tool of the suite\'s reference server (test_*); our server serves delegation tools only'
const NO_RESOURCES = 'resources: our server serves tools only (no resources capability)'
const NO_PROMPTS = 'prompts: our server serves tools only (no prompts capability)'
const NO_ASK = 'asks the client back (sampling / elicitation) from a fixture tool; our served tools never ask an MCP client'
const NO_OAUTH = 'OAuth: our client sends the static headers its config names (`headers`, e.g. a bearer token) and does no OAuth flow'

/** Scenarios that do not apply, with why. Server ones still run (the table shows what the suite saw); client ones are not run. */
const NOT_APPLICABLE: Record<Side, Record<string, string>> = {
  client: {
    'elicitation-sep1034-client-defaults': 'elicitation: our client declares no elicitation capability (an MCP tool is called by a model, with no person to ask)',
  },
  server: {
    'logging-set-level': 'logging: our server declares no logging capability',
    'completion-complete': 'completion: our server declares no completions capability (no prompts or resource templates)',
    'tools-call-simple-text': FIXTURE_TOOL,
    'tools-call-image': FIXTURE_TOOL,
    'tools-call-audio': FIXTURE_TOOL,
    'tools-call-embedded-resource': FIXTURE_TOOL,
    'tools-call-mixed-content': FIXTURE_TOOL,
    'tools-call-with-logging': FIXTURE_TOOL,
    'tools-call-error': FIXTURE_TOOL,
    'tools-call-with-progress': `${FIXTURE_TOOL} (our progress is checked by serve-mcp's own spec)`,
    'json-schema-2020-12': FIXTURE_TOOL,
    'server-sse-polling': `${FIXTURE_TOOL} (test_reconnection; a pending scenario of the suite)`,
    'tools-call-sampling': NO_ASK,
    'tools-call-elicitation': NO_ASK,
    'elicitation-sep1034-defaults': NO_ASK,
    'elicitation-sep1330-enums': NO_ASK,
    'resources-list': NO_RESOURCES,
    'resources-read-text': NO_RESOURCES,
    'resources-read-binary': NO_RESOURCES,
    'resources-templates-read': NO_RESOURCES,
    'resources-subscribe': NO_RESOURCES,
    'resources-unsubscribe': NO_RESOURCES,
    'prompts-list': NO_PROMPTS,
    'prompts-get-simple': NO_PROMPTS,
    'prompts-get-with-args': NO_PROMPTS,
    'prompts-get-embedded-resource': NO_PROMPTS,
    'prompts-get-with-image': NO_PROMPTS,
  },
}

/** Why a scenario does not apply (auth scenarios by their prefix), or undefined. */
export function notApplicable(side: Side, scenario: string): string | undefined {
  if (side === 'client' && scenario.startsWith('auth/')) return NO_OAUTH
  return NOT_APPLICABLE[side][scenario]
}
