import { LRUCache } from 'lru-cache'
import { MAX_SIZED_CHILDREN } from './results.js'

/**
 * Each child agent's transcript size so far, by agent id, as after-run.ts `runObserver` hears its turns (64 and the text of each
 * prompt, model response and tool result, and of a response's tool calls and a result's images), until its run's end takes it
 * (`continuableEnded`); a continue sets it again. Nothing is read back from the transcript; what a fork inherits is its parent's.
 * At most `max` (an agent no run made is never taken): past it the child sized first is lost for room (`lose`), its id
 * kept (4 × `max`, the oldest forgotten first) so that its run's end books it past every bound: not kept continuable, `dropped`
 * (the rest of a transcript is not its size, and a size of 4 KiB would let the book hold far more than `MAX_CONTINUABLE_BYTES`).
 * So is a run that overlapped the forgetting of such an id (`forgotAt`): its end cannot tell a child lost from one never sized.
 * The hot path (grow, take) is after-run.ts's own; this class is entered only under pressure and by a continue.
 */
export class ChildSizes extends Map<string, number> {
  /** @internal ids lost for room, the oldest forgotten first (`forgotAt`: `performance.now()` when one last was). */
  readonly lost: LRUCache<string, true>
  /** @internal */ forgotAt = -Infinity
  /** @internal when a continue set a child's size (`performance.now()`): a forgetting since then counts, not only since its turn began. */
  readonly continued = new Map<string, number>()

  constructor(/** @internal */ readonly max = MAX_SIZED_CHILDREN) {
    super()
    this.lost = new LRUCache({ max: 4 * max, dispose: (_, _id, reason) => { if (reason === 'evict') this.forgotAt = performance.now() } })
  }

  /** @internal past `max`: the child sized first is lost (growing keeps its place: after-run.ts `runObserver`). */
  lose(): void {
    const first = this.keys().next().value!
    this.delete(first)
    this.lost.set(first, true)
  }

  /** @internal a continue: child `id` counts on from `size`, the transcript it goes on from. */
  continue(id: string, size: number): void {
    this.drop(id)
    this.continued.set(id, performance.now())
    if (this.set(id, size).size > this.max) this.lose()
  }

  /** @internal forgets child `id` (a continue that did not start). */
  drop(id: string): void {
    this.delete(id)
    this.lost.delete(id)
    this.continued.delete(id)
  }
}
