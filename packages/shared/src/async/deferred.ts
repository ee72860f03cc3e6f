/** A promise settled by hand, which knows whether it has settled. */
export interface Deferred<T = void> {
  promise: Promise<T>
  resolve(value: T): void
  reject(reason: unknown): void
  settled: boolean
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
  const result: Deferred<T> = {
    promise,
    settled: false,
    resolve: (value) => { result.settled = true; resolve(value) },
    reject: (reason) => { result.settled = true; reject(reason) },
  }
  return result
}
