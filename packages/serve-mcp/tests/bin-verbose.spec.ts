/// <reference types="mocha" />
// CORDIS_SUBAGENTS_MCP_VERBOSE: only the documented true values turn the bin's debug logs on; `0`, `false` (any
// non-empty value did before) and the other off values are off, and anything else is refused with one line.
import { expect } from 'chai'
import { verboseLogs } from '../src/run-bin.js'

function withStderr<T>(work: () => T): { value: T; stderr: string } {
  let stderr = ''
  const write = process.stderr.write
  process.stderr.write = ((chunk: string) => { stderr += chunk; return true }) as typeof process.stderr.write
  try {
    return { value: work(), stderr }
  } finally {
    process.stderr.write = write
  }
}

describe('cordis-subagents-mcp: CORDIS_SUBAGENTS_MCP_VERBOSE', () => {
  it('1, true, yes, on (any case, spaces around) turn debug logs on', () => {
    for (const value of ['1', 'true', 'TRUE', ' yes ', 'On']) {
      expect(withStderr(() => verboseLogs(value))).to.deep.equal({ value: true, stderr: '' })
    }
  })

  it('unset, empty, 0, false, no, off leave them off without a word', () => {
    for (const value of [undefined, '', '0', 'false', 'False', 'no', 'off']) {
      expect(withStderr(() => verboseLogs(value))).to.deep.equal({ value: false, stderr: '' })
    }
  })

  it('any other value leaves them off and says so once, naming the values that work', () => {
    const { value, stderr } = withStderr(() => verboseLogs('debug'))
    expect(value).to.equal(false)
    expect(stderr).to.equal('cordis-subagents-mcp: ignoring CORDIS_SUBAGENTS_MCP_VERBOSE=debug: '
      + 'set it to 1 (or true, yes, on) for debug logs, or 0 (false, no, off, empty) for none\n')
  })
})
