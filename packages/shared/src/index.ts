export { count, countProblem, duration, durationProblem, MAX_TIMER_MS } from './numbers.js'
export { capBytes, describeError, headBytes, utf8Length } from './text.js'
