// The ids the chat names things by: question tags (`q4821`) and chat run ids (`r1`). Both are numbered for the life of
// the process, never per load of the plugin: a reload (or a change of an option that is not live) makes a new ChatRuns and
// QuestionBook, and an id a user saw before it must never name what is posted after it.
import { randomInt } from 'node:crypto'

/** The next `<prefix><n>` of a numbering that goes on for the life of the process, from `first`. */
function numbering(prefix: string, first: number): () => string {
  let next = first
  return () => `${prefix}${next++}`
}

/**
 * The next question tag. From a random start (1000–9999) per process, so a reply to a message posted before a restart
 * rarely names a new question (and never does on a platform that reports message ids: see `QuestionBook.quotedTag`).
 */
export const nextQuestionTag = numbering('q', 1000 + randomInt(9000))

/**
 * The next chat run id: `r1`, `r2`, … in this process, on across reloads of the plugin, so an id from before a reload
 * names no run after it (`NOT_FOUND`). A restart numbers from `r1` again; no run of before it is left to name.
 */
export const nextRunId = numbering('r', 1)
