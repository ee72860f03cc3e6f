import { Context, Schema } from 'cordis'
import { duration } from '@cordis-subagents/shared'
import { type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import { askScenario } from './demo-ask.js'
import { backgroundParent } from './demo-background.js'
import { REVIEW_PROMPT, reviewerChild, teamParent } from './demo-team.js'

/**
 * `demo-model`: a deterministic, offline `ScriptedModel` that drives a real scenario over the
 * workspace it runs in. It decides what to do from the request alone (the prompt, the tools it is
 * offered and the tool results of the current turn), so the same model serves the parent, the
 * in-process children and the child behind ACP. Answers are built from real tool output.
 *
 * Parent, first turn:  list_files(packages) → `subagent` ×2 (half of the packages each, reading
 *                       each package.json with the MCP server's `files__read_text_file` when
 *                       mounted, else `read_file`) plus
 *                       `subagent_acp` (root package.json) and `subagent_remote` (the top-level
 *                       entries, over A2A) in one step → aggregate.
 * Parent, later turns: `subagent_fork` (the child inherits the completed turns) → relay.
 * Parent, `--background`: see demo-background.ts (two background starts, own work, then collect).
 * Parent, `--team`: see demo-team.ts (the coordinator's team tool: the researcher and the reviewer by name).
 * Parent, `--ask`: see demo-ask.ts (a child asks the person, through the root, which package to read).
 */
export const name = 'demo-model'
export const reusable = true
export const inject = ['agents']

export interface Config {
  name: string
  delay?: number
}

export const Config: Schema<Config> = Schema.object({
  name: Schema.string().default('demo').description('Name the model is registered under.'),
  delay: duration().description('Milliseconds each reply takes, so progress is visible. Default: `QUICKSTART_DEMO_DELAY`, else 120.'),
})

export const PACKAGES_PROMPT = 'Read the package.json of each of these packages'
export const ROOT_PROMPT = 'Read the root package.json of the workspace'
export const FORK_PROMPT = 'From the package summary you gave earlier'
export const REMOTE_PROMPT = 'List the top-level entries of the workspace'
/** server-filesystem's read tool as packages/mcp mounts it for the server named `files`. */
export const MCP_READ_TOOL = 'files__read_text_file'

export function apply(ctx: Context, config: Config) {
  const delay = config.delay ?? (Number(process.env.QUICKSTART_DEMO_DELAY) || 120)
  const model = new ScriptedModel(async (request) => {
    if (delay) await sleep(delay, request.signal)
    return withUsage(request, respond(request))
  })
  ctx.agents.registerModel(config.name ?? 'demo', model)
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve() }, ms)
    const onAbort = () => { clearTimeout(timer); reject(signal.reason) }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** Deterministic pseudo token counts (about 4 characters per token). */
function withUsage(request: GenerateRequest, response: ScriptedResponse): ScriptedResponse {
  const input = (request.system?.length ?? 0) + request.messages.reduce((n, m) => n + m.content.length + JSON.stringify((m as any).toolCalls ?? '').length, 0)
  const output = (response.text?.length ?? 0) + JSON.stringify(response.toolCalls ?? []).length
  return { ...response, usage: { inputTokens: Math.ceil(input / 4), outputTokens: Math.ceil(output / 4) } }
}

interface Turn {
  prompt: string
  earlier: Message[]
  results: Array<Extract<Message, { role: 'tool' }>>
  tools: Set<string>
}

function currentTurn(request: GenerateRequest): Turn {
  let start = request.messages.length - 1
  while (start >= 0 && request.messages[start].role !== 'user') start--
  const prompt = start >= 0 ? request.messages[start].content : ''
  return {
    prompt,
    earlier: request.messages.slice(0, Math.max(start, 0)),
    results: request.messages.slice(start + 1).filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool'),
    tools: new Set(request.tools.map((tool) => tool.name)),
  }
}

export function respond(request: GenerateRequest): ScriptedResponse {
  const turn = currentTurn(request)
  if (turn.prompt.startsWith(PACKAGES_PROMPT)) return packagesChild(turn)
  if (turn.prompt.startsWith(ROOT_PROMPT)) return rootChild(turn, request.system)
  if (turn.prompt.startsWith(FORK_PROMPT)) return forkChild(turn)
  if (turn.prompt.startsWith(REMOTE_PROMPT)) return remoteChild(turn, request.system)
  if (turn.prompt.startsWith(REVIEW_PROMPT)) return reviewerChild(turn.results, request.system)
  const team = teamParent(request, turn.prompt, turn.results, PACKAGES_PROMPT)
  if (team) return team
  const asking = askScenario(request, turn.prompt)
  if (asking) return asking
  const background = backgroundParent(request, PACKAGES_PROMPT)
  if (background) return background
  if (turn.earlier.some((m) => m.role === 'user')) return parentFollowUp(turn)
  return parentFirstTurn(turn)
}

function parentFirstTurn(turn: Turn): ScriptedResponse {
  const listing = turn.results.find((m) => m.name === 'list_files')
  if (!listing) {
    if (!turn.tools.has('list_files')) return { text: 'The demo model needs the workspace tools (list_files, read_file); load `@cordis-subagents/quickstart/workspace-tools`.' }
    return { text: 'Let me see which packages there are.', toolCalls: [{ name: 'list_files', input: { path: 'packages' } }] }
  }
  const delegations = turn.results.filter((m) => m.name.startsWith('subagent'))
  if (!delegations.length) {
    const dirs = listing.content.split('\n').slice(1).filter((line) => line.endsWith('/')).map((line) => `packages/${line.slice(0, -1)}`)
    if (!turn.tools.has('subagent') || !dirs.length) {
      return { text: `The workspace has these packages: ${dirs.join(', ') || '(none)'}. (No \`subagent\` tool is loaded, so nothing was delegated.)` }
    }
    const half = Math.ceil(dirs.length / 2)
    const groups = [dirs.slice(0, half), dirs.slice(half)].filter((g) => g.length)
    const toolCalls = groups.map((group, i) => ({
      name: 'subagent',
      input: {
        description: `Summarize packages, part ${i + 1} of ${groups.length}`,
        prompt: `${PACKAGES_PROMPT} and report its npm name and which @cordis-subagents packages it depends on: ${group.join(', ')}. Use the read_file tool on <package>/package.json.`,
      },
    }))
    if (turn.tools.has('subagent_acp')) {
      toolCalls.push({
        name: 'subagent_acp',
        input: {
          description: 'Root workspace scripts (separate process)',
          prompt: `${ROOT_PROMPT} (the file package.json at the workspace root) and report its workspaces and npm scripts.`,
        },
      })
    }
    if (turn.tools.has('subagent_remote')) {
      toolCalls.push({
        name: 'subagent_remote',
        input: { description: 'Workspace top level (remote, over A2A)', prompt: `${REMOTE_PROMPT} (list_files on ".") and say which are directories.` },
      })
    }
    return { text: `Found ${dirs.length} packages; delegating ${toolCalls.length} tasks in parallel.`, toolCalls }
  }
  const parts = delegations.map((m) => m.isError ? `(${m.name} failed: ${m.content.split('\n')[0]})` : m.content.trim())
  const packages = delegations.filter((m) => m.name === 'subagent').map((m) => m.isError ? `(failed: ${m.content.split('\n')[0]})` : m.content.trim())
  const root = delegations.find((m) => m.name === 'subagent_acp')
  const lines = ['The workspace packages and their internal dependencies:', ...packages]
  if (root) lines.push('', 'Workspace root (answered by a child agent in a separate process over ACP):', root.isError ? `(failed: ${root.content.split('\n')[0]})` : root.content.trim())
  const remote = delegations.find((m) => m.name === 'subagent_remote')
  if (remote) lines.push('', 'Workspace top level (answered by a remote agent over A2A, another process over HTTP):', remote.isError ? `(failed: ${remote.content.split('\n')[0]})` : remote.content.trim())
  if (!parts.length) lines.push('(no delegation came back)')
  return { text: lines.join('\n') }
}

function parentFollowUp(turn: Turn): ScriptedResponse {
  const forked = turn.results.find((m) => m.name === 'subagent_fork')
  if (forked) return { text: forked.isError ? `The forked subagent failed: ${forked.content}` : `From the forked subagent (it inherited our earlier turns):\n${forked.content.trim()}` }
  if (!turn.tools.has('subagent_fork')) return { text: `No \`subagent_fork\` tool is loaded, so I cannot hand this follow-up ("${turn.prompt}") to a forked child.` }
  return {
    text: 'Handing this follow-up to a forked subagent that already has our conversation.',
    toolCalls: [{
      name: 'subagent_fork',
      input: { description: 'Rank packages by dependencies', prompt: `${FORK_PROMPT}: which package has the most internal dependencies, and which have none? (Follow-up: ${turn.prompt})` },
    }],
  }
}

function packagesChild(turn: Turn): ScriptedResponse {
  const paths = [...turn.prompt.matchAll(/packages\/[A-Za-z0-9_.-]+/g)].map((m) => m[0].replace(/\.+$/, ''))
  if (!turn.results.length) {
    // The MCP filesystem server's tool when the app mounted it (cordis.yml's mcp-files entry), else ours.
    const tool = turn.tools.has(MCP_READ_TOOL) ? MCP_READ_TOOL : 'read_file'
    return { text: `Reading ${paths.length} package.json files.`, toolCalls: paths.map((path) => ({ name: tool, input: { path: `${path}/package.json` } })) }
  }
  const lines = turn.results.map((result, i) => {
    if (result.isError) return `- ${paths[i] ?? '?'}: could not read (${result.content.split('\n')[0]})`
    try {
      const pkg = JSON.parse(result.content)
      const deps = Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@cordis-subagents/')).map((d) => d.slice('@cordis-subagents/'.length))
      return `- ${pkg.name}: ${deps.length ? `depends on ${deps.join(', ')}` : 'no internal dependencies'}`
    } catch {
      return `- ${paths[i] ?? '?'}: package.json is not valid JSON`
    }
  })
  return { text: lines.join('\n') }
}

function rootChild(turn: Turn, system?: string): ScriptedResponse {
  if (!turn.results.length) return { toolCalls: [{ name: 'read_file', input: { path: 'package.json' } }] }
  const depth = /depth (\d+)/.exec(system ?? '')?.[1]
  const where = depth === undefined ? '' : ` (answered at depth ${depth}, pid ${process.pid})`
  const result = turn.results[0]
  if (result.isError) return { text: `Could not read the root package.json: ${result.content}${where}` }
  try {
    const pkg = JSON.parse(result.content)
    return { text: `${pkg.name}: workspaces ${(pkg.workspaces ?? []).join(', ')}; npm scripts ${Object.keys(pkg.scripts ?? {}).join(', ')}${where}` }
  } catch {
    return { text: `The root package.json is not valid JSON${where}` }
  }
}

function remoteChild(turn: Turn, system?: string): ScriptedResponse {
  if (!turn.results.length) return { toolCalls: [{ name: 'list_files', input: { path: '.' } }] }
  const depth = /depth (\d+)/.exec(system ?? '')?.[1]
  const where = depth === undefined ? '' : ` (answered at depth ${depth}, pid ${process.pid})`
  const result = turn.results[0]
  if (result.isError) return { text: `Could not list the workspace: ${result.content}${where}` }
  const entries = result.content.split('\n').slice(1).filter(Boolean)
  const dirs = entries.filter((entry) => entry.endsWith('/')).map((entry) => entry.slice(0, -1))
  return { text: `${entries.length} top-level entries; directories: ${dirs.join(', ') || '(none)'}${where}` }
}

function forkChild(turn: Turn): ScriptedResponse {
  const summary = [...turn.earlier].reverse().find((m) => m.role === 'assistant' && m.content.includes('depends on') || m.role === 'assistant' && m.content.includes('no internal dependencies'))
  if (!summary) return { text: `I inherited ${turn.earlier.length} earlier messages but none of them holds a package summary.` }
  const counts = summary.content.split('\n').flatMap((line) => {
    const match = /^- (\S+): (?:depends on (.+)|no internal dependencies)$/.exec(line)
    return match ? [{ name: match[1], deps: match[2] ? match[2].split(', ').length : 0 }] : []
  })
  if (!counts.length) return { text: 'The earlier summary lists no packages.' }
  const most = counts.reduce((a, b) => (b.deps > a.deps ? b : a))
  const none = counts.filter((c) => c.deps === 0).map((c) => c.name)
  return { text: `Using the ${turn.earlier.length} messages I inherited: ${most.name} has the most internal dependencies (${most.deps}); ${none.length ? `${none.join(', ')} depend on no other package of ours` : 'every package depends on another one'}.` }
}
