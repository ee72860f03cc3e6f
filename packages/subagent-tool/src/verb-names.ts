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

/**
 * The control verbs in use beside one `ctx.subagents`, so the delegation tool's wording can name them
 * (a question names the reply verb, a cut output the result verb, a background start the rest).
 * The latest control load wins; its withdrawal (at its unload) clears only its own names.
 */
export class ControlVerbs {
  /** The names in use now (a plain field: a call reads it, once the tool load looked its registry up, with no call into this file). */
  names: Readonly<Partial<VerbNames>> = {}

  use(names: Partial<VerbNames>): () => void {
    this.names = names
    return () => { if (this.names === names) this.names = {} }
  }
}

const registries = new WeakMap<object, ControlVerbs>()

/** The control verbs of the app whose subagents service is `subagents` (any view of it). */
export function controlVerbs(subagents: object): ControlVerbs {
  const service = withoutCallerTracing(subagents)
  let verbs = registries.get(service)
  if (!verbs) registries.set(service, verbs = new ControlVerbs())
  return verbs
}
