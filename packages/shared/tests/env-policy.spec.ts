/// <reference types="mocha" />
import { expect } from 'chai'
import { EnvMatcher, type EnvPolicy, excludedValues, NOT_SECRET_NAMES, policyEnv, Redactor } from '@cordis-subagents/shared'

const policy = (inherit: EnvPolicy['inherit'], set: EnvPolicy['set'] = {}, exclude: string[] = []): EnvPolicy => ({ inherit, exclude, set })

describe('shared: the env policy of child processes (inherit, excludes, env) and the secrets it implies', () => {
  const host = {
    PATH: '/bin', HOME: '/home/u', PWD: '/work/repo', OLDPWD: '/work', XDG_SESSION_CLASS: 'user', XDG_SESSION_TYPE: 'wayland',
    DB_PASS: 'hunter2-hunter2', MYSQL_PWD: 'mysql-password-1', SSH_AUTH_SOCK: '/tmp/ssh-agent.sock', FEATURE_AUTH: 'true',
    SUBAGENT_DEPTH: '4', EDITOR: 'vi',
  }

  it('PWD, OLDPWD, HOME and the XDG session descriptions are not secrets: inherited (all) and never scrubbed', () => {
    const env = policyEnv(host, policy('all'))
    expect(env).to.include({ PWD: '/work/repo', OLDPWD: '/work', HOME: '/home/u', XDG_SESSION_CLASS: 'user', EDITOR: 'vi' })
    // Credentials matching the same globs (*PWD*, *PASS*, *AUTH*) still never arrive, nor the host's SUBAGENT_*.
    for (const name of ['DB_PASS', 'MYSQL_PWD', 'SSH_AUTH_SOCK', 'FEATURE_AUTH', 'SUBAGENT_DEPTH']) expect(env, name).to.not.have.property(name)
    const secrets = excludedValues(host, policy('core'))
    expect(secrets).to.include.members(['hunter2-hunter2', 'mysql-password-1', '/tmp/ssh-agent.sock'])
    for (const name of NOT_SECRET_NAMES) if (name in host) expect(secrets).to.not.include(host[name as keyof typeof host])
  })

  it('a scrubbed text keeps paths under PWD and words equal to a session description; the credentials go', () => {
    const redactor = new Redactor(excludedValues(host, policy('core')))
    const text = redactor.redact('cd /work/repo/packages failed for user alice (pass hunter2-hunter2); flag true; cwd was /work')
    expect(text).to.equal('cd /work/repo/packages failed for user alice (pass [redacted]); flag true; cwd was /work')
  })

  it('envExclude still drops an exception when configured; exceptions are exact names (MYSQL_PWD is no exception)', () => {
    expect(policyEnv(host, policy('all', {}, ['pwd']))).to.not.have.property('PWD')
    expect(new EnvMatcher().isExcluded('MY_PWD', '/x')).to.equal(true)
    expect(new EnvMatcher().isExcluded('pwd', '/x')).to.equal(true)
    expect(new EnvMatcher().isExcluded('PWD', '/x')).to.equal(false)
    // A URL with credentials is excluded whatever the name.
    expect(new EnvMatcher().isExcluded('PWD', 'https://u:p@example.com')).to.equal(true)
  })

  it('a proxy setting with user info but no scheme (user:password@proxy:3128, as curl and Go accept it) is dropped and scrubbed', () => {
    const proxies = {
      PATH: '/bin', HTTPS_PROXY: 'alice:s3cr3t-pw@proxy.corp:3128', http_proxy: 'bob@proxy.corp:3128', npm_config_proxy: 'carol:pw-1234@p:8080',
      NO_PROXY: 'localhost,127.0.0.1', https_proxy: 'proxy.corp:3128', EDITOR: 'me@example.com',
    }
    const env = policyEnv(proxies, policy('core'))
    expect(env).to.include({ NO_PROXY: 'localhost,127.0.0.1', https_proxy: 'proxy.corp:3128' })
    for (const name of ['HTTPS_PROXY', 'http_proxy', 'npm_config_proxy']) expect(env, name).to.not.have.property(name)
    expect(excludedValues(proxies, policy('core'))).to.include.members(['alice:s3cr3t-pw@proxy.corp:3128', 'carol:pw-1234@p:8080'])
    // Only proxy settings are read this way: an address elsewhere is no credential.
    expect(new EnvMatcher().isExcluded('EDITOR', 'me@example.com')).to.equal(false)
  })

  it('core, none and env: true / false / string behave as before', () => {
    expect(policyEnv(host, policy('core'))).to.deep.equal({ PATH: '/bin', HOME: '/home/u', XDG_SESSION_CLASS: 'user', XDG_SESSION_TYPE: 'wayland' })
    expect(policyEnv(host, policy('none', { DB_PASS: true, EDITOR: 'nano', MISSING: true, PATH: false }))).to.deep.equal({ DB_PASS: 'hunter2-hunter2', EDITOR: 'nano' })
  })
})
