// The quick start's demo output as the READMEs show it (`npm run docs:demo`; checked by test/quickstart.slow.spec.ts):
// the stdout of one offline `npm start`, with what varies from run to run masked or put in a fixed order.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './workspace-packages.js'

const DEMO_START = '<!-- demo-output:start (written by npm run docs:demo from an offline run of the quick start) -->'
const DEMO_END = '<!-- demo-output:end -->'
/** The READMEs that show the demo output, relative to the root. */
export const DEMO_READMES = ['README.md', 'examples/quickstart/README.md']

/** A line of the live tree: the elapsed stamp, then the text indented two spaces per depth. */
const TREE_LINE = /^\[ *\d+\.\ds\] ( *)(.*)$/
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/**
 * The block for the READMEs from the CLI's stdout. What varies from run to run is masked:
 * - elapsed stamps and durations become `#.#s`; run and session ids `<uuid>`; process ids `<pid>`;
 * - the usage line's token counts become `#` (the children's answers quote their process ids, so the
 *   counted text, and with it the counts, change with the length of a pid);
 * - the count of top-level entries becomes `#`, and directories the root `.gitignore` names (test
 *   output such as `test-artifacts/`) are left out of the list: both depend on the checkout, not the demo.
 * What varies in order is put in a fixed one:
 * - the tools line lists the tools sorted by name (their registration order depends on which plugin starts first);
 * - the lines of children that run at the same time are grouped per child (the children by label, each
 *   child's own lines in their order), since they interleave differently on every run;
 * - the heartbeat (`… still working`, printed only when nothing happened for 5 s) is left out.
 */
export function demoBlock(stdout: string, gitignore = readFileSync(join(ROOT, '.gitignore'), 'utf8')): string {
  const ignored = ignoredName(gitignore)
  const lines = stdout.replace(/\s+$/, '').split('\n').filter((line) => !/^\[ *\d+\.\ds\] … still working/.test(line))
  return groupChildren(lines).map((line) => maskLine(line, ignored)).join('\n')
}

function maskLine(line: string, ignored: (dir: string) => boolean): string {
  if (line.startsWith('tools: ')) return `tools: ${line.slice('tools: '.length).split(', ').sort().join(', ')}`
  let text = line
    .replace(/^\[ *\d+\.\ds\]/, '[ #.#s]')
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

/** The block between the markers of a README, or undefined when it has none. */
export function currentDemoBlock(readme: string): string | undefined {
  const start = readme.indexOf(DEMO_START)
  const end = readme.indexOf(DEMO_END)
  if (start < 0 || end < start) return undefined
  const inner = /^\n```\n([\s\S]*)\n```\n$/.exec(readme.slice(start + DEMO_START.length, end))
  return inner?.[1]
}

/** The README with `block` in a code fence between the markers (which must each appear once). */
export function withDemoBlock(readme: string, block: string, file = 'README'): string {
  const start = readme.indexOf(DEMO_START)
  const end = readme.indexOf(DEMO_END)
  if (start < 0 || end < start || readme.indexOf(DEMO_START, start + 1) >= 0 || readme.indexOf(DEMO_END, end + 1) >= 0) {
    throw new Error(`demo-output: ${file} needs exactly one "${DEMO_START}" followed by one "${DEMO_END}".`)
  }
  return `${readme.slice(0, start + DEMO_START.length)}\n\`\`\`\n${block}\n\`\`\`\n${readme.slice(end)}`
}

/** The environment of an offline run: no OPENAI_* (the `demo` model), no depth or demo delay, no span export. */
export function offlineDemoEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^(OPENAI_|SUBAGENT_|QUICKSTART_|OTEL_)/.test(name) && !/^npm_/i.test(name)))
}
