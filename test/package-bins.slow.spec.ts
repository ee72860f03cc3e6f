// The bins of the workspace as a contributor gets them: `npm ci` links node_modules/.bin/cordis-subagents-*
// (npm skips a bin whose file does not exist, so a bin must be a committed file, never a build output),
// and after a build each runs its program. The installed case (a project outside the repository, npx)
// is `npm run lint:packages` (scripts/pack-check.ts).
import { execFileSync } from 'node:child_process'
import { accessSync, constants, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { expect } from 'chai'
import { BIN_INVOCATIONS } from '../scripts/support/pack-bins.js'
import { describeResult, runCommand } from '../scripts/support/run-command.js'
import { ROOT, workspaceManifests } from '../scripts/support/workspace-packages.js'

interface Bin { name: string; dir: string; target: string }

const bins: Bin[] = workspaceManifests().flatMap((manifest) => {
  const entries = typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : manifest.bin ?? {}
  return Object.entries(entries).map(([name, target]) => ({ name, dir: manifest.dir, target: join(ROOT, manifest.dir, target) }))
})

/** The folder `tsc -b` writes a package's output to (its tsconfig's outDir). */
function outDir(dir: string): string {
  const tsconfig = JSON.parse(readFileSync(join(ROOT, dir, 'tsconfig.json'), 'utf8')) as { compilerOptions?: { outDir?: string } }
  return join(ROOT, dir, tsconfig.compilerOptions?.outDir ?? 'lib')
}

describe('workspace bins (linked by npm ci, run after a build)', function () {
  this.timeout(180_000)

  it('every bin is a committed, executable node script outside the build output, so npm ci can link it', () => {
    expect(bins.map((bin) => bin.name)).to.include.members(['cordis-subagents-acp', 'cordis-subagents-mcp', 'cordis-subagents-quickstart'])
    for (const bin of bins) {
      expect(relative(outDir(bin.dir), bin.target).startsWith('..'), `${bin.name} → ${relative(ROOT, bin.target)} is built by tsc`).to.equal(true)
      expect(readFileSync(bin.target, 'utf8').startsWith('#!/usr/bin/env node\n'), `${bin.name}: shebang`).to.equal(true)
      accessSync(bin.target, constants.X_OK)
    }
  })

  it('node_modules/.bin holds every bin, linked to its package\'s file', () => {
    for (const bin of bins) {
      const link = join(ROOT, 'node_modules/.bin', bin.name)
      expect(() => realpathSync(link), `${bin.name} is not linked: run npm install`).to.not.throw()
      expect(realpathSync(link), bin.name).to.equal(realpathSync(bin.target))
    }
  })

  it('each linked bin runs its built program (the smallest invocation that proves it starts)', async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', ...new Set(bins.map((bin) => bin.dir))], { cwd: ROOT, stdio: 'pipe' })
    const folder = mkdtempSync(join(tmpdir(), 'bins-'))
    try {
      for (const bin of bins) {
        const invocation = BIN_INVOCATIONS[bin.name]
        expect(invocation, `${bin.name}: add its invocation to scripts/support/pack-bins.ts`).to.not.equal(undefined)
        for (const [file, content] of Object.entries(invocation.files ?? {})) writeFileSync(join(folder, file), content)
        const result = await runCommand(join(ROOT, 'node_modules/.bin', bin.name), invocation.args.map((arg) => arg.replaceAll('{project}', folder)), {
          cwd: folder, input: invocation.input, endInputWhen: invocation.input ? invocation.expect : undefined, timeoutMs: 60_000,
        })
        expect(result.code, describeResult(bin.name, result)).to.equal(invocation.code)
        expect(result.stdout + result.stderr, describeResult(bin.name, result)).to.match(invocation.expect)
      }
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it('before a build, a bin says what to run instead of a module-not-found trace', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'bins-unbuilt-'))
    try {
      for (const bin of bins) {
        const copy = join(folder, bin.name, relative(join(ROOT, bin.dir), bin.target))
        mkdirSync(join(copy, '..'), { recursive: true })
        copyFileSync(bin.target, copy)
        const result = await runCommand(process.execPath, [copy, '--help'], { cwd: folder, timeoutMs: 30_000 })
        expect(result.code, describeResult(bin.name, result)).to.equal(1)
        expect(result.stderr).to.include(`${bin.name}: `).and.include('is not built: run `npm run build`')
      }
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
