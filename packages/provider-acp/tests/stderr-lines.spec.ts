/// <reference types="mocha" />
// StderrLines, the agent's stderr as log lines (the process side is stderr-text.slow.spec.ts): a line is split on the
// newline byte and decoded whole, bounded in bytes kept and in lines handed on, and never cut inside a character.
import { expect } from 'chai'
import { LOG_LINES, StderrLines } from '../src/stderr-lines.js'

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function feed(chunks: Buffer[]): string[] {
  const lines: string[] = []
  const reader = new StderrLines((line) => lines.push(line))
  for (const chunk of chunks) reader.push(chunk)
  reader.end()
  return lines
}

/** `text` as UTF-8, in chunks of `size` bytes (so characters are split). */
const pieces = (text: string, size: number) => {
  const bytes = Buffer.from(text)
  return Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size))
}

describe('provider-acp: stderr log lines', () => {
  it('characters split across chunks, one byte at a time, are decoded whole', () => {
    expect(feed(pieces('caf\u00e9 \u6f22\n\n\u{1F600} end\nlast \u{1F600}', 1))).to.deep.equal(['caf\u00e9 \u6f22', '\u{1F600} end', 'last \u{1F600}'])
  })

  it('a very long line of 4-byte characters is kept to a bounded head, cut between characters and marked', () => {
    for (const size of [7, 64 * 1024]) {
      const [line, next] = feed(pieces('\u{1F600}'.repeat(50_000) + '\nnext\n', size))
      expect(line).to.equal('\u{1F600}'.repeat(1000) + '…')
      expect(next).to.equal('next')
    }
    const [odd] = feed([Buffer.from('x' + '\u{1F600}'.repeat(5000))])
    expect(LONE.test(odd) || odd.includes('\uFFFD')).to.equal(false)
    expect(odd).to.equal('x' + '\u{1F600}'.repeat(999) + '…')
  })

  it('at most LOG_LINES lines, then one line says more were not logged; a dropped partial line is gone', () => {
    const lines = feed([Buffer.from('line\n'.repeat(LOG_LINES + 50))])
    expect(lines).to.have.length(LOG_LINES + 1)
    expect(lines.at(-1)).to.match(/more stderr not logged/)
    const kept: string[] = []
    const reader = new StderrLines((line) => kept.push(line))
    reader.push(Buffer.from('half a li'))
    reader.drop()
    reader.push(Buffer.from('ne\nwhole\n'))
    expect(kept).to.deep.equal(['ne', 'whole'])
  })
})
