/// <reference types="mocha" />
// createAcpProvider (no plugin, no schema) enforces exactly the ranges config.ts's schema declares,
// for every numeric key, whether or not the option is in use (`spares` without `warm`).
import { expect } from 'chai'
import { Config } from '../src/config.js'
import { NUMERIC_KEYS } from '../src/config-ranges.js'
import { createAcpProvider } from '../src/index.js'
import { logger } from './helpers.js'

const schemaOf = (key: string) => (Config as unknown as { dict: Record<string, { meta: { min: number; max: number } }> }).dict[key].meta

describe('provider-acp config ranges (one source: the schema)', () => {
  it('walks every numeric key of the schema', () => {
    expect([...NUMERIC_KEYS].sort()).to.deep.equal([
      'cancelGrace', 'exitGrace', 'idleTimeout', 'killGrace', 'maxOutputBytes', 'maxParkedMs', 'maxProcesses', 'maxSeedBytes',
      'maxSessionsPerProcess', 'maxSpareFailures', 'maxStreamBytes', 'spares', 'startupTimeout',
    ])
  })

  for (const key of NUMERIC_KEYS) {
    it(`${key}: the schema's bounds are accepted, one past either is refused with ACP_INVALID_CONFIG, as the schema refuses it`, async () => {
      const { min, max } = schemaOf(key)
      for (const fits of [min, max]) {
        expect(() => Config({ command: 'node', [key]: fits } as Config)).to.not.throw()
        await createAcpProvider({ command: 'node', [key]: fits, logger }).stop()
      }
      for (const outside of [min - 1, max + 1, min + 0.5]) {
        expect(() => Config({ command: 'node', [key]: outside } as Config), `schema ${key}=${outside}`).to.throw()
        let error: (Error & { code?: string }) | undefined
        try {
          await createAcpProvider({ command: 'node', [key]: outside, logger }).stop()
        } catch (caught) {
          error = caught as Error & { code?: string }
        }
        expect(error?.code, `${key}=${outside}`).to.equal('ACP_INVALID_CONFIG')
        expect(error?.message).to.include(`config.${key} must be an integer from ${min} to ${max}`)
      }
    })
  }
})
