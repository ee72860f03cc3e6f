import type { GenerateRequest, Message } from '@cordis-subagents/agent'
import type { ScriptedResponse } from '@cordis-subagents/agent'

/**
 * The background scenario of the demo model (`npm start -- --background`): the parent starts two
 * background delegations (`subagent_bg`, half of the packages each), then in one step lists the
 * workspace root itself while `subagent_wait` (mode any) collects the first result, then collects
 * the rest (a result that ended while the parent was busy arrives as a marked message instead) and
 * answers from both results and its own listing.
 */
export const BACKGROUND_TASK = 'In the background, summarize the packages of this repository while you look at the workspace root yourself.'

const START = 'subagent_bg'
const WAIT = 'subagent_wait'

type ToolMessage = Extract<Message, { role: 'tool' }>

/** The parent's reply for the background task, or undefined when the request is not that task. */
export function backgroundParent(request: GenerateRequest, packagesPrompt: string): ScriptedResponse | undefined {
  // The turn starts at the task's own user message: background results may arrive as later user messages.
  let start = request.messages.length - 1
  while (start >= 0 && !(request.messages[start].role === 'user' && request.messages[start].content === BACKGROUND_TASK)) start--
  if (start < 0) return undefined
  const results = request.messages.slice(start + 1).filter((m): m is ToolMessage => m.role === 'tool')
  const tools = new Set(request.tools.map((tool) => tool.name))
  if (!tools.has(START) || !tools.has(WAIT)) {
    return { text: `The background scenario needs the \`${START}\` tool (subagent-tool with mode: background) and \`${WAIT}\` (subagent-tool/control).` }
  }
  const [packagesListing, rootListing] = results.filter((m) => m.name === 'list_files')
  if (!packagesListing) return { text: 'First, which packages are there?', toolCalls: [{ name: 'list_files', input: { path: 'packages' } }] }
  const started = results.filter((m) => m.name === START)
  if (!started.length) {
    const dirs = packagesListing.content.split('\n').slice(1).filter((line) => line.endsWith('/')).map((line) => `packages/${line.slice(0, -1)}`)
    const half = Math.ceil(dirs.length / 2)
    const groups = [dirs.slice(0, half), dirs.slice(half)].filter((g) => g.length)
    return {
      text: `Starting ${groups.length} background subagents; I will look at the root myself meanwhile.`,
      toolCalls: groups.map((group, i) => ({
        name: START,
        input: {
          description: `Background summary, part ${i + 1} of ${groups.length}`,
          prompt: `${packagesPrompt} and report its npm name and which @cordis-subagents packages it depends on: ${group.join(', ')}. Use the read_file tool on <package>/package.json.`,
        },
      })),
    }
  }
  if (!rootListing) {
    // Its own tool call and a wait for the first result run side by side in one step.
    return {
      text: 'While they work: the workspace root; and the first result as soon as it is there.',
      toolCalls: [{ name: 'list_files', input: { path: '.' } }, { name: WAIT, input: { mode: 'any' } }],
    }
  }
  // A result comes back once: as a wait's result, or as a message if it finished while the parent was busy.
  const waits = results.filter((m) => m.name === WAIT)
  const messages = request.messages.slice(start + 1).filter((m) => m.role === 'user').map((m) => m.content)
  const collected = [...waits.map((m) => m.content), ...messages].join('\n')
  const got = (collected.match(/\[Background subagent bg-\d+ "[^"]*" (finished|ended with an error)\]/g) ?? []).length
  if (got < started.length) {
    if (waits.length < 4) return { text: 'Collecting the rest.', toolCalls: [{ name: WAIT, input: {} }] }
  }
  // Package lines only (a wait's "Still running" lines start with "- bg-"); a child's text is quoted line by line ("> ").
  const summaries = collected.split('\n').map((line) => line.replace(/^(?:> ?)+/, '')).filter((line) => line.startsWith('- @'))
  const rootEntries = rootListing.content.split('\n').slice(1).filter(Boolean)
  return {
    text: [
      'The workspace packages and their internal dependencies (from two background subagents):',
      ...summaries,
      '',
      `Meanwhile I listed the workspace root myself: ${rootEntries.length} entries (${rootEntries.slice(0, 8).join(', ')}${rootEntries.length > 8 ? ', …' : ''}).`,
    ].join('\n'),
  }
}
