export { count, countProblem, duration, durationProblem, MAX_TIMER_MS } from './numbers.js'
export { capBytes, describeError, headBytes, utf8Length } from './text.js'
export { stripControl } from './control.js'
export { capForRedaction, MAX_REDACT_CHARS, redact, REDACTED, Redactor, type RedactorOptions } from './redact.js'
