/**
 * The promise rejections nobody handled while `work` ran (and the turns of the event loop right after it, when Node
 * reports them): a listener collects them meanwhile, so none stops the process. For tests that a path leaves none.
 */
export async function unhandledRejectionsDuring(work: () => unknown): Promise<unknown[]> {
  const seen: unknown[] = []
  const collect = (reason: unknown) => { seen.push(reason) }
  process.on('unhandledRejection', collect)
  try {
    await work()
    // Node reports an unhandled rejection once the microtasks after it have run: two turns are ample.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('unhandledRejection', collect)
  }
  return seen
}
