// The quick start's hot reload as editors really save files, and what the interactive CLI prints.
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { expect } from 'chai'
import { acpAgentProcesses, buildQuickstart, QUICKSTART, runCli, withAbsolutePaths } from './helpers.js'

/** The shipped cordis.yml with its file-relative paths made absolute (the copy lives elsewhere). */
function shippedConfig(): string {
  const shipped = readFileSync(join(QUICKSTART, 'cordis.yml'), 'utf8')
  const copy = withAbsolutePaths(shipped)
  expect(copy).to.not.equal(shipped)
  return copy
}

/** The fork provider's entry with extra config lines. */
function withForkConfig(base: string, lines: string): string {
  const out = base.replace(/(- id: fork\n\s+name: .*\n\s+config:\n\s+name: fork\n)/, `$1${lines}`)
  expect(out).to.not.equal(base)
  return out
}

/** Saves like `sed -i` and editors' safe write: a new file renamed over the old name (a new inode). */
function renameSave(file: string, text: string, n: number) {
  const temp = join(file, '..', `.cordis.yml.save-${n}`)
  writeFileSync(temp, text)
  renameSync(temp, file)
}

const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern.source, 'g'))?.length ?? 0

describe('quick start --interactive: hot reload and output', function () {
  this.timeout(90_000)
  let dir: string

  before(() => buildQuickstart())
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'quickstart-reload-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('reloads after each of three successive rename-saves, rejects invalid files keeping the old config, and keeps watching', async () => {
    const config = join(dir, 'cordis.yml')
    const base = shippedConfig()
    writeFileSync(config, base)
    const cli = runCli(['--interactive', '--config', config])
    await cli.waitFor(/^> /m)

    for (const version of [1, 2, 3]) {
      renameSave(config, withForkConfig(base, `    description: a forked helper (v${version})\n`), version)
      await cli.waitFor(new RegExp(`\\[reload\\] tool subagent_fork registered: [^\\n]*Runs on: a forked helper \\(v${version}\\)\\.`))
    }
    expect(count(cli.stdout(), /\[reload\] [^\n]* changed; refreshing/)).to.equal(3)
    // The prompt is redrawn below the reload lines.
    await cli.waitFor(/a forked helper \(v3\)\.\n> $/)

    // A value that fails the provider's schema: a clear line, nothing unregistered, old config kept.
    let mark = cli.stdout().length
    renameSave(config, withForkConfig(base, '    description: never applied\n    maxSteps: lots\n'), 4)
    await cli.waitFor(/\[reload\] rejected \(CONFIG_ENTRY_SCHEMA\), previous configuration kept: entry "fork" \(@cordis-subagents\/provider-fork\): [^\n]*maxSteps[^\n]* \(line \d+\)/)
    // YAML that does not parse: the same.
    renameSave(config, `${base}\n- id: [unclosed\n`, 5)
    await cli.waitFor(/\[reload\] rejected \(CONFIG_SYNTAX\), previous configuration kept: [^\n]* \(line \d+\)/)
    expect(cli.stdout().slice(mark)).to.not.include('[reload] tool ')

    // Still watching after the failures; a good save applies.
    mark = cli.stdout().length
    renameSave(config, withForkConfig(base, '    description: a forked helper (v6)\n'), 6)
    await cli.waitFor(/\[reload\] tool subagent_fork registered: [^\n]*\(v6\)\./)
    // Only the fork provider's tool changed (from v3: the rejected files never reached the app).
    expect(cli.stdout().slice(mark).match(/\[reload\] tool (\S+)/g)).to.deep.equal(['[reload] tool subagent_fork', '[reload] tool subagent_fork'])

    cli.child.stdin!.end()
    expect(await cli.exited, cli.stderr()).to.equal(0)
    expect(acpAgentProcesses()).to.deep.equal([])
  })

  it('an in-place write (same inode) reloads too, and an unchanged save does not', async () => {
    const config = join(dir, 'cordis.yml')
    const base = shippedConfig()
    writeFileSync(config, base)
    const cli = runCli(['--interactive', '--config', config])
    await cli.waitFor(/^> /m)
    writeFileSync(config, withForkConfig(base, '    description: in place\n'))
    await cli.waitFor(/registered: [^\n]*in place/)
    renameSave(config, withForkConfig(base, '    description: in place\n'), 1)
    await cli.waitFor(/\[reload\] saved without a change; nothing to reload/)
    expect(count(cli.stdout(), /changed; refreshing/)).to.equal(1)

    // Passes the schema but fails the plugin's own check in apply: reported on one clear line.
    const bad = base.replace(/(- id: openai\n\s+name: .*\n\s+config:\n)/, '$1    baseURL: http://user:hunter2@127.0.0.1:9/v1\n')
    expect(bad).to.not.equal(base)
    writeFileSync(config, bad)
    await cli.waitFor(/\[reload\] applied with an error \(that entry is not running; fix the file to reload it\): [^\n]*"baseURL" must not contain user info/)
    expect(cli.stdout()).to.not.include('hunter2')
    cli.child.stdin!.end()
    expect(await cli.exited, cli.stderr()).to.equal(0)
  })

  it('stamps the tree with the time since the turn started, not since the app started', async () => {
    const cli = runCli(['--interactive', 'Which packages are there?'])
    await cli.waitFor(/^> /m)
    // Let the app idle well past a second before the turn.
    await delay(2_500)
    cli.child.stdin!.write('\n')
    await cli.waitFor(/usage: parent [^\n]*3 steps/)
    const turn = cli.stdout().slice(cli.stdout().indexOf('task: '))
    const stamps = [...turn.matchAll(/^\[\s*(\d+\.\d)s\]/gm)].map((match) => Number(match[1]))
    expect(stamps.length).to.be.greaterThan(3)
    // The first line of the turn comes at once (the demo model has no delay here).
    expect(stamps[0], turn).to.be.below(1.5)
    cli.child.stdin!.end()
    expect(await cli.exited, cli.stderr()).to.equal(0)
  })
})
