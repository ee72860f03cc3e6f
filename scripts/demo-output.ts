// `npm run docs:demo`: runs the quick start once, offline (the scripted `demo` model), in a fresh process from
// source, and writes its output, masked as scripts/support/demo-output.ts says, between the demo-output markers
// of README.md and examples/quickstart/README.md. `--check` writes nothing and exits 1 when a block is stale
// (test/quickstart.slow.spec.ts makes the same comparison on the built CLI's run).
// The ACP and A2A children run the built lib/ as under `npm start`: after changing a package, `npm run build` first.
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DEMO_READMES, demoBlock, offlineDemoEnv, withDemoBlock } from './support/demo-output.js'
import { ROOT } from './support/workspace-packages.js'

const TIMEOUT_MS = 120_000

/** One offline run of the quick start CLI from source (as `npm start` runs it: in the root folder). */
function runQuickstart(): Promise<string> {
  const cli = join(ROOT, 'examples', 'quickstart', 'src', 'cli.ts')
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', cli], {
    cwd: ROOT, env: offlineDemoEnv(), stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += chunk })
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const timer = setTimeout(() => child.kill('SIGINT'), TIMEOUT_MS)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 && stdout.includes('\nusage: ')) resolve(stdout)
      else reject(new Error(`the quick start exited with ${code ?? signal}:\n${stdout}\n${stderr}`))
    })
  })
}

async function main(argv: readonly string[]) {
  const block = demoBlock(await runQuickstart())
  let stale = 0
  for (const file of DEMO_READMES) {
    const path = join(ROOT, file)
    const text = readFileSync(path, 'utf8')
    const updated = withDemoBlock(text, block, file)
    if (updated === text) continue
    if (argv.includes('--check')) {
      console.error(`demo-output: ${file}'s demo output is stale; run \`npm run docs:demo\` and commit it.`)
      stale++
    } else {
      writeFileSync(path, updated)
      console.log(`demo-output: wrote ${file}`)
    }
  }
  return stale ? 1 : 0
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (error: Error) => {
  console.error(error.message)
  process.exitCode = 1
})
