import { expect } from 'chai'
import fc from 'fast-check'
import { ChildWarnings, EXPORT_FAILED } from '@cordis-subagents/shared'

const LINE = `[W] tracing ${EXPORT_FAILED}: OTLP export to http://127.0.0.1:4318/v1/traces failed with HTTP 500.`

function relayedFrom(chunks: Array<string | Buffer>, end = true): string[] {
  const lines: string[] = []
  const warnings = new ChildWarnings((line) => lines.push(line))
  for (const chunk of chunks) warnings.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
  if (end) warnings.end()
  return lines
}

describe('ChildWarnings: the lines a child process meant for its parent, out of its stderr', () => {
  it('relays only the lines that carry a relayed code, whole and trimmed', () => {
    expect(relayedFrom([`starting\n${LINE}\r\nother noise\n`])).to.deep.equal([LINE])
    expect(relayedFrom(['nothing to see\nhere\n'])).to.deep.equal([])
  })

  it('finds the code wherever the stream is cut, the last line without a newline included', () => {
    const text = `a\n${LINE}\nb\n${LINE}`
    fc.assert(fc.property(fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 8 }), (cuts) => {
      const points = [0, ...[...cuts].sort((x, y) => x - y), text.length]
      const chunks = points.slice(1).map((end, i) => text.slice(points[i], end))
      expect(relayedFrom(chunks)).to.deep.equal([LINE, LINE])
    }))
  })

  it('an unfinished line is not relayed before the stream ends', () => {
    expect(relayedFrom([LINE], false)).to.deep.equal([])
    expect(relayedFrom([LINE], true)).to.deep.equal([LINE])
  })

  it('is bounded: 16 lines per process, 2,000 characters per line, control characters removed', () => {
    expect(relayedFrom([`${LINE}\n`.repeat(100)])).to.have.length(16)
    const [long] = relayedFrom([`${LINE}\u001b[31m${'x'.repeat(10_000)}\n`])
    expect(long).to.have.length(2_001)
    expect(long.endsWith('…')).to.equal(true)
    expect(long).to.not.include('\u001b')
  })

  it('a relayed line is cleaned as a peer line (whole escape sequences, invisible text) and never cut inside a character', () => {
    const [clean] = relayedFrom([`${LINE} \u001b]52;c;aGk=\u0007\u001b[31mred\u202e\u{E0041}\n`])
    expect(clean).to.equal(`${LINE} red`)
    const [cut] = relayedFrom([`${LINE} ${'x'.repeat(2_000 - LINE.length - 2)}😀 tail\n`])
    expect(/[\ud800-\udbff](?![\udc00-\udfff])/.test(cut), JSON.stringify(cut.slice(-4))).to.equal(false)
    expect(cut.endsWith('x…')).to.equal(true)
  })

  it('a megabyte line without a newline keeps a bounded carry and still finds a code at its end', () => {
    const lines: string[] = []
    const warnings = new ChildWarnings((line) => lines.push(line))
    for (let i = 0; i < 16; i++) warnings.push(Buffer.alloc(64 * 1024, 0x61))
    warnings.push(Buffer.from(`${EXPORT_FAILED} at the end\n`))
    // Found in the carried tail; relayed cut to its first 2,000 characters.
    expect(lines).to.have.length(1)
    expect(lines[0]).to.equal(`${'a'.repeat(2_000)}…`)
  })

  it('a throwing relay does not stop the reading', () => {
    let calls = 0
    const warnings = new ChildWarnings(() => {
      calls++
      throw new Error('logger down')
    })
    warnings.push(Buffer.from(`${LINE}\n${LINE}\n`))
    expect(calls).to.equal(2)
  })
})
