export { count, countProblem, duration, durationProblem, MAX_TIMER_MS } from './numbers.js'
