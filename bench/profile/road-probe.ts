import { readFileSync } from 'node:fs'
import { Session } from 'node:inspector'
import ts from 'typescript'
import type { GenerateResponse } from '@cordis-subagents/agent'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { BenchModel, calls, CHILD, delegationModel, host, lastMessage, text } from '../lib.js'

// The files of ours one delegation calls into, and how control moves between them, traced in this
// process with the inspector: a breakpoint on the first statement of every function (and class field
// initialiser) of every file of ours that is loaded, each hit recorded and resumed at once. `road.ts`
// prints the trace; `test/plain-road-files.slow.spec.ts` checks it against the route drawn in
// packages/subagents-service/README.md and caps its re-entries.

/** `sync`: the tool returns the child's answer. `background`: it returns a handle, and the answer comes back to the parent's inbox. */
export type RoadMode = 'sync' | 'background'

export interface RoadFile {
  /** `package/path` without the extension, e.g. `agent/turn`. */
  file: string
  /** The functions that ran in it (`(anonymous)` for an unnamed one), in the order they first ran. */
  ran: string[]
}

/** Control entering `to` by a call from `from` (the nearest frame of ours on the stack outside `shared`). */
export interface RoadEntry { from: string; to: string; fn: string }

export interface Road {
  /** Every file of ours with a function that ran during the delegation (the parent's turn included), sorted. */
  files: RoadFile[]
  /**
   * The calls from one file into another from the model's tool call (the first call into `subagent-tool`) to the
   * tool result (the last call from or into it), in order. A function run with no frame of ours under it is
   * control coming back when a promise settles (an `await` returning, a `then`): a return, not an entry.
   */
  entries: RoadEntry[]
}

/** The background workload: the parent starts one child in the background, waits for its result message, then answers. */
function backgroundModel(): BenchModel {
  return new BenchModel((request): GenerateResponse => {
    const last = lastMessage(request)
    if (last.content.startsWith(CHILD)) return text('child answer')
    if (last.role === 'tool') return text('waiting for the child')
    if (last.content.includes('child answer')) return text('parent final answer')
    return calls([{ name: 'subagent', input: { description: 'look something up', prompt: `${CHILD}look something up` } }])
  })
}

const OURS = /\/packages\/([^/]+)\/(?:src|lib)\/(.+)\.[jt]s$/

/** Whether `file` (`package/path`) is a shared helper: counted apart, and passed through when finding a caller. */
export const isShared = (file: string): boolean => file.startsWith('shared/')

/**
 * The packages the workload's app loads (bench/lib.ts `host`), with every package of ours they depend on: no other code
 * of ours can run in it (a process that loaded more, a test worker's, is not traced in those).
 */
function appPackages(): Set<string> {
  const found = new Set<string>()
  const visit = (name: string) => {
    if (found.has(name)) return
    found.add(name)
    const path = new URL(`../../packages/${name}/package.json`, import.meta.url)
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as Record<string, object | undefined>
    for (const dependency of Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })) {
      if (dependency.startsWith('@cordis-subagents/')) visit(dependency.slice('@cordis-subagents/'.length))
    }
  }
  for (const name of ['tools', 'agent', 'subagents-service', 'subagent-tool', 'provider-spawn', 'provider-fork']) visit(name)
  return found
}

type Post = <T = Record<string, unknown>>(method: string, params?: object) => Promise<T>

interface Location { scriptId: string; lineNumber: number; columnNumber: number }

/**
 * Code the TypeScript loader writes into a module, not ours: its helpers (`var __name = …`) and, where it loads a module
 * as CommonJS (a test worker), the getters of its exports (`__export(exports, { name: () => name })`).
 */
function isBundlerHelper(node: ts.Node): boolean {
  if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)) return node.name.text.startsWith('__')
  return ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === '__export'
}

/** Where each function of `source` (as V8 runs it) starts: its body, or a class's first instance field initialiser. */
function functionStarts(source: string): Array<{ start: number; end: number }> {
  const file = ts.createSourceFile('script.js', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS)
  const starts: Array<{ start: number; end: number }> = []
  const visit = (node: ts.Node): void => {
    if (isBundlerHelper(node)) return
    if (ts.isFunctionLike(node) && 'body' in node && node.body) starts.push({ start: node.body.getStart(file), end: node.body.end })
    if (ts.isClassLike(node)) {
      const field = node.members.find((member) => ts.isPropertyDeclaration(member) && member.initializer
        && !member.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.StaticKeyword))
      if (field) starts.push({ start: field.getStart(file), end: field.end })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return starts
}

/**
 * Sets a breakpoint on each function start of every loaded file of the app's packages (shared's too), each file parsed
 * as V8 runs it; returns the file of each script id.
 */
async function breakEveryFunction(post: Post, scripts: Map<string, string>): Promise<Map<string, string>> {
  const fileOf = new Map<string, string>()
  const packages = appPackages()
  for (const [scriptId, url] of scripts) {
    const match = OURS.exec(url)
    if (!match || !packages.has(match[1])) continue
    const file = `${match[1]}/${match[2]}`
    fileOf.set(scriptId, file)
    const { scriptSource } = await post<{ scriptSource: string }>('Debugger.getScriptSource', { scriptId })
    const lineStarts = [0]
    for (let i = 0; i < scriptSource.length; i++) if (scriptSource[i] === '\n') lineStarts.push(i + 1)
    const at = (offset: number): Location => {
      let line = 0
      while (line + 1 < lineStarts.length && lineStarts[line + 1] <= offset) line++
      return { scriptId, lineNumber: line, columnNumber: offset - lineStarts[line] }
    }
    // V8 moves a breakpoint to the first place it can break at or after the one asked for: a body's first statement.
    await Promise.all(functionStarts(scriptSource).map(({ start }) => post('Debugger.setBreakpoint', { location: at(start) }).catch(() => undefined)))
  }
  return fileOf
}

interface PausedFrame { functionName: string; location: Location }

/**
 * The road of one delegation of `mode`, after a warm-up (the parent's turn that makes the call included: the
 * child's turn runs the same files), over a real app (bench/lib.ts `host`: the real services, the spawn
 * provider, a zero-latency model).
 */
export async function traceRoad(mode: RoadMode, warmUp = 20): Promise<Road> {
  const background = mode === 'background'
  const h = await host({
    model: background ? backgroundModel() : delegationModel('subagent'),
    ...background ? { tool: { mode: 'background', onTurnEnd: 'wait' } } : {},
  })
  const session = new Session()
  const post: Post = (method, params) => new Promise((resolve, reject) => {
    session.post(method, params as never, (error, result) => (error ? reject(error) : resolve(result as never)))
  })
  try {
    const agents = withoutCallerTracing(h.ctx.agents)
    const once = async () => {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      await agent.dispose()
      if (result.text !== 'parent final answer') throw new Error(`the delegation went wrong: ${result.stopReason} ${JSON.stringify(result.text)}`)
    }
    for (let i = 0; i < warmUp; i++) await once()
    session.connect()
    const scripts = new Map<string, string>()
    session.on('Debugger.scriptParsed', ({ params }) => { if (OURS.test(params.url)) scripts.set(params.scriptId, params.url) })
    await post('Debugger.enable')
    const fileOf = await breakEveryFunction(post, scripts)
    const hits: Array<{ from?: string; to: string; fn: string }> = []
    session.on('Debugger.paused', ({ params }) => {
      const frames = params.callFrames as PausedFrame[]
      const to = fileOf.get(frames[0].location.scriptId)
      let from: string | undefined
      for (const frame of frames.slice(1)) {
        const file = fileOf.get(frame.location.scriptId)
        if (file && !isShared(file)) {
          from = file
          break
        }
      }
      if (to) hits.push({ from, to, fn: frames[0].functionName || '(anonymous)' })
      session.post('Debugger.resume')
    })
    await once()
    await post('Debugger.disable')
    return { files: filesOf(hits), entries: window(hits) }
  } finally {
    session.disconnect()
    await h.stop()
  }
}

function filesOf(hits: Array<{ to: string; fn: string }>): RoadFile[] {
  const byFile = new Map<string, Set<string>>()
  for (const { to, fn } of hits) byFile.set(to, (byFile.get(to) ?? new Set()).add(fn))
  return [...byFile].map(([file, ran]) => ({ file, ran: [...ran] })).sort((a, b) => a.file.localeCompare(b.file))
}

/** The calls between files from the first call into `subagent-tool` to the last call from or into it. */
function window(hits: Array<{ from?: string; to: string; fn: string }>): RoadEntry[] {
  const tool = (file?: string) => file?.startsWith('subagent-tool/') ?? false
  const first = hits.findIndex((hit) => tool(hit.to))
  const last = hits.findLastIndex((hit) => tool(hit.to) || tool(hit.from))
  return hits.slice(first, last + 1).filter((hit): hit is RoadEntry => hit.from !== undefined && hit.from !== hit.to && !isShared(hit.to))
}

/** The files of ours that ran during one delegation of `mode` (see `traceRoad`). */
export async function roadFiles(mode: RoadMode, warmUp = 20): Promise<RoadFile[]> {
  return (await traceRoad(mode, warmUp)).files
}

/**
 * The files the road enters through more than one door: for each, the files it is called from, in the order
 * they first called it. A file called again and again from the one file that called it first keeps its one
 * place on the route (a loop, or a second call after the first returned); a call into it from a second file
 * (a callback into a file already left, a lookup from a later step) enters it twice.
 */
export function reentries(entries: RoadEntry[]): Map<string, string[]> {
  const doors = new Map<string, string[]>()
  for (const { from, to } of entries) {
    const list = doors.get(to) ?? []
    if (!list.includes(from)) list.push(from)
    doors.set(to, list)
  }
  return new Map([...doors].filter(([, list]) => list.length > 1))
}

/** How many times the road enters a file it already entered through another door: each extra door once. */
export const reentryCount = (entries: RoadEntry[]): number =>
  [...reentries(entries).values()].reduce((sum, doors) => sum + doors.length - 1, 0)

/**
 * The route from the tool call to the tool result as a tree of files: each file under the file that first called
 * into it, in the order they were first entered, with the other files that called into it after (its re-entries).
 */
export function drawRoute(entries: RoadEntry[]): string {
  const parentOf = new Map<string, string>()
  const children = new Map<string, string[]>()
  const roots: string[] = []
  for (const { from, to } of entries) {
    if (parentOf.has(to) || roots.includes(to)) continue
    if (!parentOf.has(from) && !roots.includes(from)) roots.push(from)
    parentOf.set(to, from)
    children.set(from, [...children.get(from) ?? [], to])
  }
  const again = reentries(entries)
  const lines: string[] = []
  const draw = (file: string, indent: string, last: boolean, top: boolean) => {
    const others = again.get(file)?.filter((door) => door !== parentOf.get(file))
    lines.push(`${top ? '' : `${indent}${last ? '└─ ' : '├─ '}`}${file}${others?.length ? `   (also from ${others.join(', ')})` : ''}`)
    const below = children.get(file) ?? []
    below.forEach((child, i) => draw(child, top ? '' : `${indent}${last ? '   ' : '│  '}`, i === below.length - 1, false))
  }
  for (const root of roots) draw(root, '', true, true)
  return lines.join('\n')
}
