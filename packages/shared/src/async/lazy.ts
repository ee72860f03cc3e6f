/**
 * `load` run on first use and its promise shared by every caller (a slow cold import, such as a
 * protocol SDK, that an app which never needs it should not pay for). A failure is not kept: the
 * next call tries again.
 */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined
  return () => pending ??= load().catch((error: unknown) => {
    pending = undefined
    throw error
  })
}
