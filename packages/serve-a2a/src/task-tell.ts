import { CodedError } from '@cordis-subagents/shared'

/**
 * Where each task agent's `tell_parent` messages go while a leg of its turn runs: that execution's events (a `working`
 * status update with the told data part). Between legs (parked) and after the end there is no stream to the parent.
 */
const streams = new WeakMap<object, (message: string) => void>()

/** While `leg` runs, `agent`'s told messages go to `publish`. */
export async function tellingTo<T>(agent: object, publish: (message: string) => void, leg: () => Promise<T>): Promise<T> {
  streams.set(agent, publish)
  try {
    return await leg()
  } finally {
    streams.delete(agent)
  }
}

/** The served agent's `tell_parent` delivery: the task's stream (a status update has no answer: the parent's refusals stay there). */
export function tellTask(message: string, agent: object): void {
  const publish = streams.get(agent)
  if (!publish) throw new CodedError('NO_PARENT', 'no parent is listening to this task now; put it in your final answer')
  publish(message)
}
