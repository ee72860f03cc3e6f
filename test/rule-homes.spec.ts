// Each rule is written once (DESIGN §3): the name pattern, a non-negative integer, a bearer token, a
// traceparent, a loopback host, who may bind off loopback, a bounded response body, a credential name and state kept with an
// agent (a WeakMap keyed by agents held them through young collections) each have one home in @cordis-subagents/shared.
// This fails when a package's src/ restates one of them instead of importing it from its home. A bounded body is
// recognised by a fetch response's body read by hand (any stream adapter makes a `ReadableStream`: serve-acp's flow control).
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { expect } from 'chai'
import { ROOT } from '../scripts/support/workspace-packages.js'

interface Rule {
  rule: string
  home: string
  /** What a copy of the rule looks like. */
  copy: RegExp
  use: string
}

const SHARED = 'packages/shared/src'
const RULES: Rule[] = [
  { rule: 'the name pattern', home: `${SHARED}/vocabulary/names.ts`, copy: /\[A-Za-z0-9_-\]\{1,64\}/, use: 'NAME_PATTERN / isName' },
  {
    rule: 'a non-negative safe integer', home: `${SHARED}/vocabulary/usage.ts`, use: 'isCount',
    copy: /isSafeInteger\(([\w.]+)\) && \1 >= 0|isSafeInteger\(([\w.]+)\) \|\| \2 < 0/,
  },
  { rule: 'a bearer token', home: `${SHARED}/security/host-guards.ts`, copy: /\/\^bearer/i, use: 'bearerToken (then sameSecret)' },
  { rule: 'a traceparent', home: `${SHARED}/crossing/trace-context.ts`, copy: /\[0-9a-f\]\{32\}/, use: 'parseTraceparent / traceContextFrom' },
  { rule: 'a loopback host', home: `${SHARED}/security/host-guards.ts`, copy: /'::1'|startsWith\('127\.'\)/, use: 'isLoopback' },
  { rule: 'who may bind off loopback', home: `${SHARED}/security/host-guards.ts`, copy: /isLoopback\([\w.]*\.host\b/, use: 'bindRefusal' },
  { rule: 'a bounded response body', home: `${SHARED}/security/bounded-body.ts`, copy: /\b(?:res|response)\w*\.body!?\.getReader\(\)/, use: 'boundedBody' },
  { rule: 'state kept with an agent', home: `${SHARED}/vocabulary/kept-with.ts`, copy: /WeakMap<Agent\b/, use: 'KeptWith' },
  { rule: 'a credential name', home: `${SHARED}/security/credential-shapes.ts`, copy: /(auth|key|token|secret)\|(auth|key|token|secret)/i, use: 'isCredentialName' },
]

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** `file:line: <rule> restated (use <home's export>)` for each copy outside its home. */
function restatedRules(files: readonly { path: string, text: string }[], rules: readonly Rule[] = RULES): string[] {
  return files.flatMap(({ path, text }) => rules.flatMap((rule) => path === rule.home ? [] : text.split('\n').flatMap((line, index) =>
    rule.copy.test(line) ? [`${path}:${index + 1}: ${rule.rule} restated (use ${rule.use} from ${rule.home})`] : [])))
}

describe('rule homes (each rule written once)', () => {
  it('no package source restates a rule that shared holds', () => {
    const packages = join(ROOT, 'packages')
    const files = readdirSync(packages).flatMap((name) => {
      try {
        return sources(join(packages, name, 'src'))
      } catch {
        return []
      }
    }).map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }))
    expect(files.length).to.be.greaterThan(100)
    expect(restatedRules(files)).to.deep.equal([])
  })

  it('each home holds its rule, and a copy elsewhere is named with its line and what to use', () => {
    for (const rule of RULES) expect(readFileSync(join(ROOT, rule.home), 'utf8'), rule.home).to.match(rule.copy)
    const copy = { path: 'packages/x/src/a.ts', text: 'const ok = 1\nconst NAME = /^[A-Za-z0-9_-]{1,64}$/\nif (Number.isSafeInteger(n) && n >= 0) f()\nif (!Number.isSafeInteger(c.turn) || c.turn < 0) g()\n' }
    expect(restatedRules([copy])).to.deep.equal([
      `packages/x/src/a.ts:2: the name pattern restated (use NAME_PATTERN / isName from ${SHARED}/vocabulary/names.ts)`,
      `packages/x/src/a.ts:3: a non-negative safe integer restated (use isCount from ${SHARED}/vocabulary/usage.ts)`,
      `packages/x/src/a.ts:4: a non-negative safe integer restated (use isCount from ${SHARED}/vocabulary/usage.ts)`,
    ])
  })
})
