/// <reference types="mocha" />
import { expect } from 'chai'
import type { EnvPolicy } from '@cordis-subagents/shared'
import { childEnv, secretValues } from '@cordis-subagents/provider-acp/testing'
import { createAcpProvider } from '../src/index.js'
import { LEAKED, logger } from './helpers.js'

const policy = (inherit: EnvPolicy['inherit'], set: EnvPolicy['set'] = {}, exclude: string[] = []): EnvPolicy => ({ inherit, exclude, set })

describe('provider-acp: the child\'s environment (inherit, envExclude, env) and the secrets it implies', () => {
  const host = {
    PATH: '/bin', HOME: '/home/u', LANG: 'C.UTF-8', LC_ALL: 'C', TERM: 'xterm', npm_config_cache: '/c',
    EDITOR: 'vi', SUBAGENT_DEPTH: '7', SUBAGENT_ALLOWED_TOOLS: 'everything', ...LEAKED,
  }

  it('inherit: core passes only the core allow-list; no listed secret arrives', () => {
    const env = childEnv(host, policy('core'), { SUBAGENT_DEPTH: '2' })
    expect(env).to.deep.equal({
      PATH: '/bin', HOME: '/home/u', LANG: 'C.UTF-8', LC_ALL: 'C', TERM: 'xterm', npm_config_cache: '/c', SUBAGENT_DEPTH: '2',
    })
  })

  it('inherit: all passes the rest, minus every excluded name and every URL with credentials', () => {
    const env = childEnv(host, policy('all'), { SUBAGENT_DEPTH: '2' })
    for (const name of Object.keys(LEAKED)) expect(env, name).to.not.have.property(name)
    expect(env).to.include({ EDITOR: 'vi', PATH: '/bin', SUBAGENT_DEPTH: '2' })
    // Our own variables are never inherited: only what the provider sets arrives.
    expect(env).to.not.have.property('SUBAGENT_ALLOWED_TOOLS')
  })

  it('a core variable whose value carries user info is dropped, also a token without a colon', () => {
    const env = childEnv({ PATH: '/bin', HTTPS_PROXY: 'https://ghp_abcdefghijklmnop1234@proxy.example:8080', HTTP_PROXY: 'http://proxy.example:3128' },
      policy('core'), {})
    expect(env).to.deep.equal({ PATH: '/bin', HTTP_PROXY: 'http://proxy.example:3128' })
  })

  it('inherit: none passes nothing but env and our SUBAGENT_* variables; envExclude adds patterns', () => {
    expect(childEnv(host, policy('none', { EDITOR: true }), { SUBAGENT_DEPTH: '1' })).to.deep.equal({ EDITOR: 'vi', SUBAGENT_DEPTH: '1' })
    expect(childEnv(host, policy('all', {}, ['edit*']), {})).to.not.have.property('EDITOR')
  })

  it('env sets, passes through (even excluded names) and removes; SUBAGENT_* set by the provider win over everything', () => {
    const env = childEnv(host, policy('core', { GH_TOKEN: true, HOME: false, EXTRA: 'e', MISSING: true, SUBAGENT_DEPTH: '9' }), { SUBAGENT_DEPTH: '2' })
    expect(env).to.deep.equal({ PATH: '/bin', LANG: 'C.UTF-8', LC_ALL: 'C', TERM: 'xterm', npm_config_cache: '/c', GH_TOKEN: 'gh-token-0018', EXTRA: 'e', SUBAGENT_DEPTH: '2' })
  })

  it('the values of every excluded variable are secrets for the scrubber, PATH is not', () => {
    const values = secretValues(host, policy('core', { MY_TOKEN: 'configured-token-value', PLAIN: 'plain-value' }))
    for (const value of Object.values(LEAKED)) expect(values, value).to.include(value)
    expect(values).to.include('configured-token-value')
    expect(values).to.not.include('plain-value')
    expect(values).to.not.include('/bin')
  })

  it('OpenTelemetry exporter headers (a collector\'s API key) are excluded and scrubbed; passing them explicitly still works', () => {
    const otel = { OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=hc-key-0001', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'api-key=hc-key-0002', OTEL_SERVICE_NAME: 'svc' }
    expect(childEnv(otel, policy('all'), {})).to.deep.equal({ OTEL_SERVICE_NAME: 'svc' })
    expect(childEnv(otel, policy('none', { OTEL_EXPORTER_OTLP_HEADERS: true }), {})).to.deep.equal({ OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=hc-key-0001' })
    expect(secretValues(otel, policy('core'))).to.deep.equal(['x-honeycomb-team=hc-key-0001', 'api-key=hc-key-0002'])
  })

  it('env entries that cannot be a variable are refused at load, naming the entry (programmatic use too)', () => {
    const load = (env: Record<string, unknown>) => {
      try {
        createAcpProvider({ command: 'agent', logger, env: env as Record<string, string | boolean> })
      } catch (error) {
        return error as Error & { code?: string }
      }
      return undefined
    }
    for (const [env, expected] of [
      [{ 'A=B': 'C' }, 'invalid variable name "A=B"'],
      [{ '=': 'C' }, 'invalid variable name "="'],
      [{ '': 'C' }, 'invalid variable name ""'],
      [{ 'NUL\0NAME': true }, 'invalid variable name "NUL\\u0000NAME"'],
      [{ GOOD: 'one\0two' }, 'env.GOOD must be a string without NUL'],
      [{ COUNT: 3 }, 'env.COUNT must be a string without NUL'],
    ] as Array<[Record<string, unknown>, string]>) {
      const error = load(env)
      expect(error?.code, expected).to.equal('ACP_INVALID_CONFIG')
      expect(error!.message).to.include(expected)
    }
    expect(load({ PATH: true, HOME: false, LANG: 'C.UTF-8', 'weird.name-ok': 'x' })).to.equal(undefined)
  })
})
