import { withoutCallerTracing } from '@cordis-subagents/shared'

/** The tools a control load (`./control`) gives the model beside the delegation tool, by verb. */
export interface VerbNames {
  wait: string
  status: string
  cancel: string
  send: string
  reply: string
  result: string
  continue: string
}

/** What a caller can call: its tool view (an agent's `tools`). */
interface CallerTools {
  has(name: string): boolean
}

/**
 * The control verbs in use beside one `ctx.subagents`, so the delegation tool's wording can name them
 * (a question names the reply verb, a cut output the result verb, a background start the rest).
 * Each control load adds its own set of names and withdraws only that set at its unload; a caller is
 * told the names of the newest set whose verbs it can call (`verbsSeenBy`), so two loads with
 * different prefixes (a root-only one and a `nested` one) coexist in any load order.
 */
export class ControlVerbs {
  /**
   * The sets in use, oldest first. Replaced at each load and unload, never changed in place: a call reads it as a
   * plain field (a background start with no call into this file).
   */
  sets: readonly Readonly<Partial<VerbNames>>[] = []

  use(names: Partial<VerbNames>): () => void {
    // A copy: the same names used twice are two sets, each withdrawn by its own use.
    const set = Object.freeze({ ...names })
    this.sets = [...this.sets, set]
    return () => { this.sets = this.sets.filter((kept) => kept !== set) }
  }
}

/**
 * The names of `verbs` in the newest set that names them all and whose every one `tools` can call (a child does
 * not see a load that is not `nested`, nor a verb its tool filter hides); undefined when no set does.
 */
export function verbsSeenBy<K extends keyof VerbNames>(
  verbs: ControlVerbs, tools: CallerTools | undefined, ...wanted: K[]
): Pick<VerbNames, K> | undefined {
  if (!tools) return undefined
  for (let index = verbs.sets.length - 1; index >= 0; index--) {
    const set = verbs.sets[index]
    if (wanted.every((verb) => set[verb] !== undefined && tools.has(set[verb]))) return set as Pick<VerbNames, K>
  }
  return undefined
}

const registries = new WeakMap<object, ControlVerbs>()

/** The control verbs of the app whose subagents service is `subagents` (any view of it). */
export function controlVerbs(subagents: object): ControlVerbs {
  const service = withoutCallerTracing(subagents)
  let verbs = registries.get(service)
  if (!verbs) registries.set(service, verbs = new ControlVerbs())
  return verbs
}
