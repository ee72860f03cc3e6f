import type { GenerateRequest, Message, ScriptedResponse } from '@cordis-subagents/agent'

/**
 * The asking scenario of the demo model (`npm start -- --interactive --ask`): the parent hands a
 * task to a child through `subagent_ask` (provider `spawn-ask`, whose children get `ask_parent`;
 * the tool load escalates questions). The child does not know which package to summarize, so it
 * asks; the question rides up to the root, whose run ends `pending`; the person's next line is the
 * answer (`agent.resume`), the child reads that package's package.json, and the parent relays it.
 */
export const ASK_TASK = 'Ask me which package to summarize, then summarize it.'
const ASK_PROMPT = 'Ask which package the person wants summarized'
const ASK_QUESTION = 'Which package should I summarize? Name one folder of packages/ (for example: agent, tools, console).'

const START = 'subagent_ask'
const ASK = 'ask_parent'

type ToolMessage = Extract<Message, { role: 'tool' }>

/** Tool results of the current turn (after its user message). */
function toolResults(messages: readonly Message[]): ToolMessage[] {
  let start = messages.length - 1
  while (start >= 0 && messages[start].role !== 'user') start--
  return messages.slice(start + 1).filter((m): m is ToolMessage => m.role === 'tool')
}

/** The reply for the ask scenario (parent or child), or undefined when the request is not part of it. */
export function askScenario(request: GenerateRequest, prompt: string): ScriptedResponse | undefined {
  if (prompt.startsWith(ASK_PROMPT)) return askingChild(request)
  if (prompt !== ASK_TASK) return undefined
  const tools = new Set(request.tools.map((tool) => tool.name))
  const relayed = toolResults(request.messages).find((m) => m.name === START)
  if (relayed) return { text: relayed.isError ? `The asking subagent failed: ${relayed.content}` : `From the subagent that asked you:\n${relayed.content.trim()}` }
  if (!tools.has(START)) return { text: `The ask scenario needs the \`${START}\` tool (subagent-tool on provider spawn-ask, questions: escalate).` }
  return {
    text: 'Handing this to a subagent that will ask you which package you mean.',
    toolCalls: [{ name: START, input: { description: 'Summarize the package you name', prompt: `${ASK_PROMPT}, then read its package.json and summarize it.` } }],
  }
}

function askingChild(request: GenerateRequest): ScriptedResponse {
  const results = toolResults(request.messages)
  const answer = results.find((m) => m.name === ASK)
  if (!answer) {
    if (!request.tools.some((tool) => tool.name === ASK)) return { text: `I cannot ask anyone: no \`${ASK}\` tool (load provider-spawn with askParent: true).` }
    return { text: 'I need to know which package.', toolCalls: [{ name: ASK, input: { question: ASK_QUESTION } }] }
  }
  const folder = answer.content.trim().replace(/^packages\//, '').split(/[\s/]/)[0] ?? ''
  const read = results.find((m) => m.name === 'read_file')
  if (!read) return { toolCalls: [{ name: 'read_file', input: { path: `packages/${folder}/package.json` } }] }
  if (read.isError) return { text: `There is no package "${folder}" I can read (${read.content.split('\n')[0]}).` }
  try {
    const pkg = JSON.parse(read.content)
    const deps = Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@cordis-subagents/')).map((d) => d.slice('@cordis-subagents/'.length))
    return { text: `${pkg.name}: ${pkg.description ?? '(no description)'} Internal dependencies: ${deps.join(', ') || 'none'}.` }
  } catch {
    return { text: `packages/${folder}/package.json is not valid JSON.` }
  }
}
