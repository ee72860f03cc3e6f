// The quick start's demo output as the READMEs show it (`npm run docs:demo`; checked by test/quickstart.slow.spec.ts):
// the stdout of one offline `npm start` (and of one `npm start -- --interactive --ask`, typed into as a person
// would), with what varies from run to run masked or put in a fixed order.
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import { StringDecoder } from 'node:string_decoder'
import { ROOT } from './workspace-packages.js'

/** What a person types: once the stdout printed so far matches `after`, `line` and Enter, or (`line: null`) Ctrl-D. */
interface Typed {
  after: RegExp
  line: string | null
}

/** A run of the quick start whose output READMEs show between markers of its own. */
export interface DemoSample {
  /** What it is, in messages (`demo output`). */
  title: string
  /** The quick start's arguments (`npm start -- <args>`). */
  args: readonly string[]
  /** What is typed into it, in order; none: its input is closed from the start. */
  input?: readonly Typed[]
  start: string
  end: string
  /** The READMEs that show it, relative to the root. */
  readmes: readonly string[]
}

/** The READMEs that show the demo output, relative to the root. */
export const DEMO_READMES = ['README.md', 'examples/quickstart/README.md']

/** `npm start`: the demo question, four delegations. */
const DEMO: DemoSample = {
  title: 'demo output',
  args: [],
  start: '<!-- demo-output:start (written by npm run docs:demo from an offline run of the quick start) -->',
  end: '<!-- demo-output:end -->',
  readmes: DEMO_READMES,
}

/**
 * `npm start -- --interactive --ask` as the quick start README shows it: Enter at the first prompt (the
 * task `ASK_TASK`), the answer `agent` to the child's question, then Ctrl-D once the usage line is out.
 */
export const ASK_DEMO: DemoSample = {
  title: '--ask sample',
  args: ['--interactive', '--ask'],
  input: [
    { after: /(^|\n)interactive: [^\n]*\n> $/, line: '' },
    { after: /\nyour answer \(the next line you type goes to it\):\n> $/, line: 'agent' },
    { after: /\nusage: [^\n]*\n> $/, line: null },
  ],
  start: '<!-- ask-output:start (written by npm run docs:demo from an offline run of npm start -- --interactive --ask) -->',
  end: '<!-- ask-output:end -->',
  readmes: ['examples/quickstart/README.md'],
}

/** Every sample `npm run docs:demo` writes. */
export const DEMO_SAMPLES: readonly DemoSample[] = [DEMO, ASK_DEMO]

/**
 * Types `input` into the child (stdin and stdout piped) as its stdout asks for it, and returns what a terminal
 * would show: the stdout, each typed line echoed after the prompt it answered. Call it before the child prints.
 */
export function typeInto(child: ChildProcess, input: readonly Typed[] = []): () => string {
  const decoder = new StringDecoder('utf8')
  let printed = ''
  let shown = ''
  let next = 0
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = decoder.write(chunk)
    printed += text
    shown += text
    const typed = input[next]
    if (!typed?.after.test(printed)) return
    next++
    if (typed.line === null) return void child.stdin!.end()
    child.stdin!.write(`${typed.line}\n`)
    shown += `${typed.line}\n`
  })
  return () => shown
}

/** A line of the live tree: the elapsed stamp, then the text indented two spaces per depth. */
const TREE_LINE = /^\[ *\d+\.\ds\] ( *)(.*)$/
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/**
 * The block for the READMEs from the CLI's stdout. What varies from run to run is masked:
 * - elapsed stamps and durations become `#.#s`; run and session ids `<uuid>`, the service's run ids
 *   (`run-<time>-<random>-<n>`) `run-<id>`; process ids `<pid>`; the repository's path is left out of paths;
 * - the usage line's token counts become `#` (the children's answers quote their process ids, so the
 *   counted text, and with it the counts, change with the length of a pid);
 * - the count of top-level entries becomes `#`, and directories the root `.gitignore` names (test
 *   output such as `test-artifacts/`) are left out of the list: both depend on the checkout, not the demo.
 * What varies in order is put in a fixed one:
 * - the tools line lists the tools sorted by name (their registration order depends on which plugin starts first);
 * - the lines of children that run at the same time are grouped per child (the children by label, each
 *   child's own lines in their order), since they interleave differently on every run;
 * - the heartbeat (`… still working`, printed only when nothing happened for 5 s) is left out, and so is
 *   the interactive prompt (`>`) the output ends at, where Ctrl-D quits.
 */
export function demoBlock(stdout: string, gitignore = readFileSync(join(ROOT, '.gitignore'), 'utf8')): string {
  const ignored = ignoredName(gitignore)
  const lines = stdout.replace(/(\n>)?\s*$/, '').split('\n').filter((line) => !/^\[ *\d+\.\ds\] … still working/.test(line))
  return groupChildren(lines).map((line) => maskLine(line, ignored)).join('\n')
}

function maskLine(line: string, ignored: (dir: string) => boolean): string {
  if (line.startsWith('tools: ')) return `tools: ${line.slice('tools: '.length).split(', ').sort().join(', ')}`
  let text = line
    .split(`${ROOT}${sep}`).join('')
    .replace(/^\[ *\d+\.\ds\]/, '[ #.#s]')
    .replace(/\brun-[0-9a-z]+-[0-9a-f]+-\d+\b/g, 'run-<id>')
    .replace(/ in \d+\.\ds\b/g, ' in #.#s')
    .replace(UUID, '<uuid>')
    .replace(/\bsession-\d+-/g, 'session-<pid>-')
    .replace(/\bpid \d+/g, 'pid <pid>')
  const usage = /^usage: parent \d+ tokens \(in \d+ \/ out \d+\) · delegated \d+ tokens (across \d+ delegations?) · total \d+ · (\d+ steps?) · \d+\.\ds$/.exec(text)
  if (usage) text = `usage: parent # tokens (in # / out #) · delegated # tokens ${usage[1]} · total # · ${usage[2]} · #.#s`
  const top = /^\d+ top-level entries; directories: (.*?)( \(answered .*)?$/.exec(text)
  if (top) {
    const dirs = top[1].split(', ').filter((dir) => !ignored(dir))
    text = `# top-level entries; directories: ${dirs.join(', ') || '(none)'}${top[2] ?? ''}`
  }
  return text
}

/** A child's lines name it: `┌ tool → provider: "label" started`, `│ label · …`, `└ label: …`. */
function childLabel(text: string, labels: readonly string[]): string | undefined {
  const started = /^┌ .*?: "(.*)" started/.exec(text)
  if (started) return started[1]
  return labels.find((label) => text.startsWith(`│ ${label} · `) || text.startsWith(`└ ${label}: `))
}

/** Each run of consecutive child lines (indented below the parent), grouped per child, children sorted by label. */
function groupChildren(lines: readonly string[]): string[] {
  const out: string[] = []
  let run: string[] = []
  const flush = () => {
    const labels = run.flatMap((line) => {
      const label = /^┌ .*?: "(.*)" started/.exec(TREE_LINE.exec(line)![2])?.[1]
      return label === undefined ? [] : [label]
    })
    const groups = new Map<string, string[]>()
    for (const line of run) {
      const label = childLabel(TREE_LINE.exec(line)![2], labels) ?? ''
      groups.set(label, [...groups.get(label) ?? [], line])
    }
    for (const label of [...groups.keys()].sort()) out.push(...groups.get(label)!)
    run = []
  }
  for (const line of lines) {
    const tree = TREE_LINE.exec(line)
    if (tree && tree[1].length >= 2) {
      run.push(line)
      continue
    }
    flush()
    out.push(line)
  }
  flush()
  return out
}

/** Whether a top-level directory is one the `.gitignore` names (name patterns only; `*` and `?` as in git). */
function ignoredName(gitignore: string): (dir: string) => boolean {
  const patterns = gitignore.split('\n').map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#') && !line.startsWith('!'))
    .map((line) => line.replace(/^\//, '').replace(/\/$/, ''))
    .filter((line) => !line.includes('/'))
    .map((line) => new RegExp(`^${line.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')}$`))
  return (dir) => patterns.some((pattern) => pattern.test(dir))
}

/** The block between `sample`'s markers in a README, or undefined when it has none. */
export function currentDemoBlock(readme: string, sample: DemoSample = DEMO): string | undefined {
  const start = readme.indexOf(sample.start)
  const end = readme.indexOf(sample.end)
  if (start < 0 || end < start) return undefined
  const inner = /^\n```\n([\s\S]*)\n```\n$/.exec(readme.slice(start + sample.start.length, end))
  return inner?.[1]
}

/** The README with `block` in a code fence between `sample`'s markers (which must each appear once). */
export function withDemoBlock(readme: string, block: string, file = 'README', sample: DemoSample = DEMO): string {
  const start = readme.indexOf(sample.start)
  const end = readme.indexOf(sample.end)
  if (start < 0 || end < start || readme.indexOf(sample.start, start + 1) >= 0 || readme.indexOf(sample.end, end + 1) >= 0) {
    throw new Error(`demo-output: ${file} needs exactly one "${sample.start}" followed by one "${sample.end}".`)
  }
  return `${readme.slice(0, start + sample.start.length)}\n\`\`\`\n${block}\n\`\`\`\n${readme.slice(end)}`
}

/** The environment of an offline run: no OPENAI_* (the `demo` model), no depth or demo delay, no span export. */
export function offlineDemoEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^(OPENAI_|SUBAGENT_|QUICKSTART_|OTEL_)/.test(name) && !/^npm_/i.test(name)))
}
