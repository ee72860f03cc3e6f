// One error base: every error class a package exports extends shared's `CodedError`, so any error
// of ours carries a stable `code` and `instanceof CodedError` tells it from a foreign one.
import { expect } from 'chai'
import { CodedError } from '@cordis-subagents/shared'
import { entryPoints } from '../scripts/support/package-surface.js'

type ErrorClass = new (code: string, message: string) => Error & { code: string }

describe('error classes (one base, a stable code each)', function () {
  // Imports every entry point from src/ through tsx.
  this.timeout(120_000)

  it('every exported error class extends CodedError and keeps its own name, code and message', async () => {
    const found: string[] = []
    for (const point of entryPoints().filter((entry) => !entry.program)) {
      const mod = await import(point.specifier) as Record<string, unknown>
      for (const [name, value] of Object.entries(mod)) {
        if (typeof value !== 'function' || !(value.prototype instanceof Error) || value === CodedError) continue
        found.push(name)
        expect(value.prototype, `${point.specifier}: ${name} extends CodedError`).to.be.an.instanceOf(CodedError)
        const error = new (value as ErrorClass)('SOME_CODE', 'what happened')
        expect([error.name, error.code, error.message], `${point.specifier}: ${name}`).to.deep.equal([name, 'SOME_CODE', 'what happened'])
      }
    }
    expect(found).to.include.members([
      'AgentError', 'ToolError', 'SubagentError', 'LimitError', 'CheckpointError', 'ConfigWatchError', 'ConsoleError', 'McpError',
      'ModelOpenAIError', 'A2aError', 'AcpError', 'ServeA2aError', 'ServeAcpError',
    ])
  })

  it('the base keeps a cause and names itself', () => {
    const cause = new Error('below')
    const error = new CodedError('X', 'above', { cause })
    expect([error.name, error.code, error.message, error.cause]).to.deep.equal(['CodedError', 'X', 'above', cause])
  })
})
