// A mocha reporter: mocha's `spec` output, plus how long each spec file took (its suites' hooks and
// tests, wall clock). `npm run test:times` writes the list to test-times.json and prints the slowest 20.
const { writeFileSync } = require('node:fs')
const Mocha = require('mocha')

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants

class FileTimes extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    const started = new Map()
    const spent = new Map()
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) started.set(suite, process.hrtime.bigint())
    })
    runner.on(EVENT_SUITE_END, (suite) => {
      const begin = started.get(suite)
      if (begin === undefined) return
      started.delete(suite)
      const ms = Number(process.hrtime.bigint() - begin) / 1e6
      spent.set(suite.file, (spent.get(suite.file) ?? 0) + ms)
    })
    runner.once(EVENT_RUN_END, () => {
      const cwd = process.cwd() + '/'
      const files = [...spent].map(([file, ms]) => ({ file: file.replace(cwd, ''), seconds: Math.round(ms / 100) / 10 }))
      files.sort((a, b) => b.seconds - a.seconds)
      const out = options.reporterOption?.output ?? 'test-times.json'
      writeFileSync(out, JSON.stringify(files, null, 2) + '\n')
      const total = files.reduce((sum, f) => sum + f.seconds, 0)
      console.log(`\nThe 20 slowest spec files (of ${files.length}, ${Math.round(total)} s in all; every file: ${out}):`)
      for (const { file, seconds } of files.slice(0, 20)) console.log(`  ${seconds.toFixed(1).padStart(7)} s  ${file}`)
    })
  }
}

module.exports = FileTimes
