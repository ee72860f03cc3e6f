import assert from 'node:assert/strict'
import { STOP_REASONS } from '../run/limit-stops.js'
import type { SubagentResult, SubagentRun } from '../types.js'

// Checks shared by the provider contract's cases (contract.ts, contract-steering.ts).

export function assertCode(action: () => void, code: string): void {
  let thrown: unknown
  try {
    action()
  } catch (error) {
    thrown = error
  }
  assert.ok(thrown !== undefined, `expected send() to throw ${code}; it returned`)
  assert.equal((thrown as { code?: unknown }).code, code, `expected ${code}, got ${String((thrown as Error).message ?? thrown)}`)
  assert.equal((thrown as Error).name, 'SubagentError', 'send() refusals are SubagentErrors')
}

/** The run's result, which must fulfil (never reject) within `ms`. */
export async function settledResult(run: SubagentRun, ms: number): Promise<SubagentResult> {
  const result = await within(Promise.resolve(run.result).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  ), ms, 'the run result')
  if ('error' in result) assert.fail(`run.result rejected (it must never reject): ${String(result.error)}`)
  assert.ok(STOP_REASONS.includes(result.value?.stopReason), `unknown stop reason ${String(result.value?.stopReason)}`)
  return result.value
}

/** `promise`, or a failure naming `what` if it has not settled within `ms` (a hang, not a speed check). */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, hung])
  } finally {
    clearTimeout(timer)
  }
}

export async function ticks(times: number): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}
