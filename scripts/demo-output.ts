// `npm run docs:demo`: runs the quick start offline (the scripted `demo` model), in a fresh process from source,
// once per sample of scripts/support/demo-output.ts, and writes its output, masked as that file says, between the
// sample's markers: the demo (`npm start`) between the demo-output markers of README.md and
// examples/quickstart/README.md, the asking demo (`npm start -- --interactive --ask`, typed into: Enter, the answer
// `agent`, Ctrl-D) between the ask-output markers of examples/quickstart/README.md. `--check` writes nothing and
// exits 1 when a block is stale (test/quickstart.slow.spec.ts makes the same comparisons on the built CLI's runs).
// The ACP and A2A children run the built lib/ as under `npm start`: after changing a package, `npm run build` first.
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DEMO_SAMPLES, type DemoSample, demoBlock, offlineDemoEnv, typeInto, withDemoBlock } from './support/demo-output.js'
import { ROOT } from './support/workspace-packages.js'

const TIMEOUT_MS = 120_000

/** One offline run of the quick start CLI from source (as `npm start` runs it: in the root folder), typed into. */
function runQuickstart(sample: DemoSample): Promise<string> {
  const cli = join(ROOT, 'examples', 'quickstart', 'src', 'cli.ts')
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', cli, ...sample.args], {
    cwd: ROOT, env: offlineDemoEnv(), stdio: [sample.input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  })
  const shown = typeInto(child, sample.input)
  let stderr = ''
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const timer = setTimeout(() => child.kill('SIGINT'), TIMEOUT_MS)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 && shown().includes('\nusage: ')) resolve(shown())
      else reject(new Error(`the quick start (${sample.title}) exited with ${code ?? signal}:\n${shown()}\n${stderr}`))
    })
  })
}

async function main(argv: readonly string[]) {
  let stale = 0
  for (const sample of DEMO_SAMPLES) {
    const block = demoBlock(await runQuickstart(sample))
    for (const file of sample.readmes) {
      const path = join(ROOT, file)
      const text = readFileSync(path, 'utf8')
      const updated = withDemoBlock(text, block, file, sample)
      if (updated === text) continue
      if (argv.includes('--check')) {
        console.error(`demo-output: ${file}'s ${sample.title} is stale; run \`npm run docs:demo\` and commit it.`)
        stale++
      } else {
        writeFileSync(path, updated)
        console.log(`demo-output: wrote ${sample.title} in ${file}`)
      }
    }
  }
  return stale ? 1 : 0
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (error: Error) => {
  console.error(error.message)
  process.exitCode = 1
})
