import { Logger } from 'cordis'
import { warmAcp } from './scenarios/acp.js'
import { fmtStats } from './lib.js'
Logger.levels.base = 1
const r = await warmAcp({ iterations: 30, warmup: 3 })
for (const name of Object.keys(r.result)) console.log(name.padEnd(80), fmtStats(r.result[name]).padEnd(28), fmtStats(r.disposed[name]))
