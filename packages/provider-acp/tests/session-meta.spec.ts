/// <reference types="mocha" />
// config.sessionMeta is checked at load (createAcpProvider, no process started): an object, and
// none of the provider's own `_meta` keys.
import { expect } from 'chai'
import { Config } from '../src/config.js'
import { createAcpProvider } from '../src/index.js'
import { logger } from './helpers.js'

function loadError(sessionMeta: unknown): (Error & { code?: string }) | undefined {
  try {
    createAcpProvider({ command: 'node', sessionMeta: sessionMeta as Record<string, unknown>, logger })
  } catch (error) {
    return error as Error & { code?: string }
  }
  return undefined
}

describe('provider-acp config.sessionMeta', () => {
  it('defaults to none in the schema, and an object of the agent\'s own keys loads', async () => {
    expect(Config({ command: 'node' }).sessionMeta).to.deep.equal({})
    await createAcpProvider({ command: 'node', sessionMeta: { claudeCode: { options: { executableArgs: ['--no-lazy'] } } }, logger }).stop()
  })

  for (const key of ['cordisSubagents', 'traceparent', 'tracestate']) {
    it(`refuses the provider's own key ${key} with ACP_INVALID_CONFIG`, () => {
      const error = loadError({ [key]: { depth: 0 }, other: 1 })
      expect(error?.code).to.equal('ACP_INVALID_CONFIG')
      expect(error?.message).to.include(`must not set ${key}`)
    })
  }

  for (const value of [[], null, 'claudeCode']) {
    it(`refuses ${JSON.stringify(value)} (not an object) with ACP_INVALID_CONFIG`, () => {
      const error = loadError(value)
      expect(error?.code).to.equal('ACP_INVALID_CONFIG')
      expect(error?.message).to.include('must be an object')
    })
  }
})
