import { readFileSync, statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { BUDGET_KEYS, type BudgetLimits, outputContract } from '@cordis-subagents/agent'
import { isCount, isName, NAME_RULE, toolFilterProblem } from '@cordis-subagents/shared'
import { DefinitionError } from './errors.js'
import type { AgentDefinition, DefinitionInput } from './types.js'

/** Largest soul (system prompt) read from a file: 256 KiB, about 64k tokens. */
export const MAX_SOUL_BYTES = 256 * 1024
/** Longest `does` line: it is composed into a delegating model's tool description. */
export const MAX_DOES_LENGTH = 1000
/** The provider a definition runs on when it names none. */
export const DEFAULT_PROVIDER = 'spawn'

/**
 * One definition, checked and frozen: a valid name, a non-blank `does`, a strict `uses` filter,
 * whole-number budget limits, at most one of `soul` / `soulFile` (the file read now, relative to
 * `baseDir`), team names that are names. Team members are checked by `checkTeams`.
 */
export function checkDefinition(name: string, input: DefinitionInput, source: string, baseDir: string): AgentDefinition {
  const fail = (text: string) => { throw new DefinitionError('INVALID_DEFINITION', `Agent "${name}" (${source}): ${text}`) }
  if (!isName(name)) fail(`the name is not a valid agent name (${NAME_RULE}).`)
  if (typeof input?.does !== 'string' || !input.does.trim()) fail('`does` is required: one line that tells a delegating model what this agent is for.')
  const does = input.does.trim().replace(/\s+/g, ' ')
  if (does.length > MAX_DOES_LENGTH) fail(`\`does\` is ${does.length} characters; keep it to ${MAX_DOES_LENGTH}.`)
  if (input.uses !== undefined) {
    const problem = toolFilterProblem(input.uses, '`uses`', true)
    if (problem) fail(problem)
  }
  const team = [...new Set(input.team ?? [])].sort()
  for (const member of team) if (typeof member !== 'string' || !isName(member)) fail(`team member ${JSON.stringify(member)} is not an agent name.`)
  if (input.soul !== undefined && input.soulFile !== undefined) fail('give `soul` or `soulFile`, not both.')
  if (input.soul !== undefined && (typeof input.soul !== 'string' || !input.soul.trim())) fail('`soul` is blank; omit it to keep the provider\'s default.')
  const budget = input.budget && checkBudget(input.budget, fail)
  // A bad schema fails the load with the agent's code, INVALID_OUTPUT_SCHEMA, naming the definition.
  if (input.output !== undefined) outputContract(input.output, `Agent "${name}" (${source}): output`)
  for (const key of ['budgetNote', 'tellParent'] as const) {
    if (input[key] !== undefined && typeof input[key] !== 'boolean') fail(`\`${key}\` is true or false; omit it to follow the tool load.`)
  }
  const provider = input.provider ?? DEFAULT_PROVIDER
  if (!isName(provider)) fail(`provider ${JSON.stringify(provider)} is not a provider name.`)
  if (input.model !== undefined && (typeof input.model !== 'string' || !input.model.trim())) fail('`model` is blank; omit it to use the parent\'s model.')
  const definition: AgentDefinition = {
    name,
    does,
    team,
    provider,
    source,
    ...input.uses ? { uses: Object.freeze({ ...input.uses }) } : {},
    ...input.soul !== undefined ? { soul: input.soul } : {},
    ...input.soulFile !== undefined ? readSoul(name, input.soulFile, baseDir, source) : {},
    ...budget ? { budget } : {},
    ...input.output !== undefined ? { output: Object.freeze({ ...input.output }) } : {},
    ...input.budgetNote !== undefined ? { budgetNote: input.budgetNote } : {},
    ...input.tellParent !== undefined ? { tellParent: input.tellParent } : {},
    ...input.model !== undefined ? { model: input.model.trim() } : {},
  }
  return Object.freeze(definition)
}

function checkBudget(budget: BudgetLimits, fail: (text: string) => never): Readonly<BudgetLimits> {
  const out: BudgetLimits = {}
  for (const [key, value] of Object.entries(budget)) {
    if (value === undefined) continue
    if (!(BUDGET_KEYS as readonly string[]).includes(key)) fail(`\`budget.${key}\` is not a budget (${BUDGET_KEYS.join(', ')}).`)
    if (!isCount(value)) fail(`\`budget.${key}\` must be a whole number >= 0.`)
    out[key as keyof BudgetLimits] = value
  }
  return Object.freeze(out)
}

function readSoul(name: string, file: string, baseDir: string, source: string): { soul: string; soulFile: string } {
  const path = isAbsolute(file) ? file : resolve(baseDir, file)
  const fail = (text: string): never => { throw new DefinitionError('SOUL_FILE', `Agent "${name}" (${source}): soulFile ${path} ${text}`) }
  let size = 0
  try {
    const stat = statSync(path)
    if (!stat.isFile()) fail('is not a file.')
    size = stat.size
  } catch (error) {
    if (error instanceof DefinitionError) throw error
    fail(`cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`)
  }
  if (size > MAX_SOUL_BYTES) fail(`is ${size} bytes; a soul is at most ${MAX_SOUL_BYTES}.`)
  const soul = readFileSync(path, 'utf8')
  if (!soul.trim()) fail('is empty.')
  return { soul, soulFile: path }
}

/**
 * Team checks over the definitions of one entry (`added`) against those defined already
 * (`known`): every member is defined (`UNKNOWN_TEAM_MEMBER`, with the names there are), and a cycle
 * in the team graph is allowed only when a definition on it carries `budget.maxDepth` (else `TEAM_CYCLE`):
 * the service's depth ceiling would stop it, but a team that delegates to itself is usually a mistake.
 */
export function checkTeams(added: readonly AgentDefinition[], known: ReadonlyMap<string, AgentDefinition>): void {
  const all = new Map(known)
  for (const definition of added) all.set(definition.name, definition)
  for (const definition of added) {
    for (const member of definition.team) {
      if (all.has(member)) continue
      const names = [...all.keys()].sort().join(', ') || 'none'
      throw new DefinitionError('UNKNOWN_TEAM_MEMBER', `Agent "${definition.name}" (${definition.source}): team member "${member}" is not defined (defined: ${names}). An entry's team may name agents of the same entry or of other entries (it waits teamWait ms for them).`)
    }
  }
  for (const definition of added) {
    const cycle = cycleFrom(definition.name, all)
    if (cycle && !cycle.some((name) => all.get(name)?.budget?.maxDepth !== undefined)) {
      throw new DefinitionError('TEAM_CYCLE', `Agent "${definition.name}" (${definition.source}): its team delegates back to itself (${cycle.join(' → ')} → ${cycle[0]}) and no agent on that cycle sets budget.maxDepth to bound it.`)
    }
  }
}

/** A path of team edges from `start` back to `start`, if there is one. */
function cycleFrom(start: string, all: ReadonlyMap<string, AgentDefinition>): string[] | undefined {
  const seen = new Set<string>()
  const walk = (name: string, path: string[]): string[] | undefined => {
    for (const member of all.get(name)?.team ?? []) {
      if (member === start) return path
      if (seen.has(member)) continue
      seen.add(member)
      const found = walk(member, [...path, member])
      if (found) return found
    }
    return undefined
  }
  return walk(start, [start])
}
