// Issue 39, item 18: the quick start's a2a-host plugin starts its A2A server (lib/a2a-server.js, a real process) with
// provider-acp's env policy, not this process's whole environment. What the server got is read from /proc.
import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import { Context } from 'cordis'
import QuickstartA2a from '@cordis-subagents/quickstart/a2a-host'
import { alive, buildQuickstart, eventually, ROOT } from './helpers.js'

const SET = {
  QUICKSTART_SPEC_DB_PASSWORD: 'pw-never-to-leave-the-host',
  QUICKSTART_SPEC_PLAIN: 'not a credential, not asked for',
  QUICKSTART_SPEC_ASKED: 'passed because env lists it',
  QUICKSTART_DEMO_DELAY: '0',
}

/** The environment a running process was started with (Linux). */
function environOf(pid: number): Record<string, string> {
  const env: Record<string, string> = {}
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean)) {
    const at = entry.indexOf('=')
    env[entry.slice(0, at)] = entry.slice(at + 1)
  }
  return env
}

describe('issue 39: the quick start\'s A2A server gets the env policy, not the whole environment', function () {
  this.timeout(60_000)
  const saved: Record<string, string | undefined> = {}

  before(() => buildQuickstart())
  beforeEach(() => {
    for (const [name, value] of Object.entries(SET)) {
      saved[name] = process.env[name]
      process.env[name] = value
    }
  })
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })

  async function serverEnv(config: Record<string, unknown>): Promise<Record<string, string>> {
    const ctx = new Context()
    ctx.plugin(QuickstartA2a, { root: ROOT, ...config })
    await ctx.start()
    await ctx.lifecycle.flush()
    const pid = ctx.quickstartA2a.pid!
    try {
      expect(ctx.quickstartA2a.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/)
      return environOf(pid)
    } finally {
      await ctx.stop()
      expect(await eventually(() => !alive(pid), 10_000)).to.equal(true)
    }
  }

  it('a secret of the host does not reach the server; core variables and the default model/demo settings do', async () => {
    const env = await serverEnv({})
    expect(env).to.not.have.property('QUICKSTART_SPEC_DB_PASSWORD')
    expect(Object.values(env)).to.not.include(SET.QUICKSTART_SPEC_DB_PASSWORD)
    expect(env).to.not.have.property('QUICKSTART_SPEC_PLAIN')
    expect(env.PATH).to.equal(process.env.PATH)
    expect(env.QUICKSTART_DEMO_DELAY).to.equal('0')
    expect(env).to.not.have.property('QUICKSTART_SPEC_ASKED')
  })

  it('`env` passes a variable by name, and even `inherit: all` leaves credentials out', async () => {
    const env = await serverEnv({ inherit: 'all', env: { QUICKSTART_SPEC_ASKED: true } })
    expect(env.QUICKSTART_SPEC_ASKED).to.equal(SET.QUICKSTART_SPEC_ASKED)
    expect(env.QUICKSTART_SPEC_PLAIN).to.equal(SET.QUICKSTART_SPEC_PLAIN)
    expect(env).to.not.have.property('QUICKSTART_SPEC_DB_PASSWORD')
  })
})
