/**
 * How many `AbortSignal`s are made while `work` runs (an `AbortController` makes its signal when `signal` is first
 * read): for tests that a path makes none.
 */
export async function signalsMadeDuring(work: () => unknown): Promise<number> {
  const native = Object.getOwnPropertyDescriptor(AbortController.prototype, 'signal')!
  const seen = new WeakSet<AbortSignal>()
  let made = 0
  Object.defineProperty(AbortController.prototype, 'signal', {
    ...native,
    get(this: AbortController) {
      const signal = native.get!.call(this) as AbortSignal
      if (!seen.has(signal)) {
        seen.add(signal)
        made++
      }
      return signal
    },
  })
  try {
    await work()
  } finally {
    Object.defineProperty(AbortController.prototype, 'signal', native)
  }
  return made
}
