import type { GenerateRequest, Message, ScriptedResponse } from '@cordis-subagents/agent'

/**
 * The team scenario of the demo model (`npm start -- --team`): the parent, holding the coordinator's
 * team tool `delegate`, gives in one step the researcher (defined in cordis.yml) some packages to read and
 * the reviewer (defined by .claude/agents/reviewer.md) the root package.json to review, then merges both answers.
 */
export const TEAM_TASK = 'As a team, summarize some packages of this repository and review the root package.json.'
export const REVIEW_PROMPT = 'Review the root package.json of the workspace'

const TOOL = 'delegate'
type ToolMessage = Extract<Message, { role: 'tool' }>

/** The parent's reply for the team task, or undefined when the request is not that task. */
export function teamParent(
  request: GenerateRequest, prompt: string, results: ToolMessage[], packagesPrompt: string,
): ScriptedResponse | undefined {
  if (prompt !== TEAM_TASK) return undefined
  if (!request.tools.some((tool) => tool.name === TOOL)) return { text: `The team scenario needs the \`${TOOL}\` tool (subagent-tool with agent: coordinator).` }
  const listing = results.find((m) => m.name === 'list_files')
  if (!listing) return { text: 'Which packages are there?', toolCalls: [{ name: 'list_files', input: { path: 'packages' } }] }
  const answers = results.filter((m) => m.name === TOOL)
  if (!answers.length) {
    const dirs = listing.content.split('\n').slice(1).filter((line) => line.endsWith('/')).slice(0, 3).map((line) => `packages/${line.slice(0, -1)}`)
    return {
      text: 'Handing the packages to the researcher and the root package.json to the reviewer.',
      toolCalls: [
        { name: TOOL, input: { agent: 'researcher', description: 'Summarize three packages', prompt: `${packagesPrompt} and report its npm name and which @cordis-subagents packages it depends on: ${dirs.join(', ')}. Use the read_file tool on <package>/package.json.` } },
        { name: TOOL, input: { agent: 'reviewer', description: 'Review the root package.json', prompt: `${REVIEW_PROMPT} (package.json) and report problems.` } },
      ],
    }
  }
  const [research, review] = answers
  const text = (m: ToolMessage | undefined) => (m ? (m.isError ? `(failed: ${m.content.split('\n')[0]})` : m.content.trim()) : '(no answer)')
  return { text: ['From the researcher:', text(research), '', 'From the reviewer:', text(review)].join('\n') }
}

/** The reviewer child: reads package.json, then reports; it says whether it runs with the soul from its agent file. */
export function reviewerChild(results: ToolMessage[], system: string | undefined): ScriptedResponse {
  if (!results.length) return { toolCalls: [{ name: 'read_file', input: { path: 'package.json' } }] }
  const soul = system?.includes('You are the reviewer of this team') ? 'reviewer (soul from .claude/agents/reviewer.md)' : 'reviewer (no soul)'
  const result = results[0]
  if (result.isError) return { text: `${soul}: could not read package.json: ${result.content.split('\n')[0]}` }
  try {
    const pkg = JSON.parse(result.content) as { name?: string; scripts?: Record<string, string>; engines?: Record<string, string> }
    const problems: string[] = []
    if (!pkg.scripts?.test) problems.push('no `test` script')
    if (!pkg.engines?.node) problems.push('no `engines.node`')
    return { text: `${soul}: ${pkg.name ?? 'package.json'} has ${Object.keys(pkg.scripts ?? {}).length} scripts; ${problems.length ? `problems: ${problems.join('; ')}` : 'no problems found'}.` }
  } catch {
    return { text: `${soul}: package.json is not valid JSON.` }
  }
}
