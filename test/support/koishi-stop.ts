// What a clean Koishi stop looks like to the Koishi specs (the console form, the market install).
import { expect } from 'chai'

/** `koishi start` ended by SIGTERM exits 0, says so, and logged no error (`[E]`) but those matching `allowed`. */
export function expectCleanStop(run: { code: number | null; stdout: string }, allowed?: RegExp): void {
  expect(run.code, run.stdout).to.equal(0)
  expect(run.stdout).to.include('terminated by SIGTERM')
  const errors = run.stdout.split('\n').filter((line) => line.includes('[E]') && !allowed?.test(line))
  expect(errors, run.stdout).to.deep.equal([])
}
