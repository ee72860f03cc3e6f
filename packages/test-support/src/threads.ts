import { readdirSync } from 'node:fs'

/** This process's threads (Linux): the main one, V8's and libuv's, and every worker thread still running. */
export function threadCount(): number {
  return readdirSync('/proc/self/task').length
}
