/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import { checkedQuestion, isPeerControl, peerLine, peerText, questionFromMeta, quotedLines, stripControl } from '@cordis-subagents/shared'

/** Everything the rule removes wherever it stands: C0 but tab and newline, DEL, C1, bidi controls, hiding characters, separators. */
const PEER_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/
const HOSTILE = '\u001b]52;c;SGVsbG8=\u0007\u001b]0;pwned\u0007\u001b[2K\u009b31m\u202e\u2066\u2067\u2068\u2069\u0085\u009c\r'

function cpuMs(work: () => void): number {
  const before = process.cpuUsage()
  work()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

describe('shared: peerText (the one sanitizer for text from peers)', () => {
  it('removes escape sequences whole, C0/C1 controls, bidi controls and isolates, keeping the text, newlines and tabs', () => {
    expect(peerText(`a${HOSTILE}b\r\nc\td`)).to.equal('ab\nc\td')
    expect(peerText('invoice\u202Efdp.exe')).to.equal('invoicefdp.exe')
    expect(peerText('x\u001b[38;5;196mred\u001b[0m\u001bcy')).to.equal('xredy')
    expect(peerText('a\u001b]0;title never ends\nvisible')).to.equal('a\nvisible')
    expect(peerText('one\u2028two\u2029three')).to.equal('one\ntwo\nthree')
    expect(peerText('plain text — ünïcödé ✓ 日本語')).to.equal('plain text — ünïcödé ✓ 日本語')
  })

  it('removes characters that hide text: zero-width space, word joiner, BOM, tag characters; joiners only between ASCII', () => {
    expect(peerText('pay\u200Bpal\u2060\uFEFF')).to.equal('paypal')
    expect(peerText(`ok${String.fromCodePoint(0xe0049, 0xe0067, 0xe006e)}!`)).to.equal('ok!')
    expect(peerText('ad\u200Dmin ad\u200Cmin \u200Dx')).to.equal('admin admin x')
    // Emoji sequences and scripts that need joiners keep them.
    const family = '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}'
    expect(peerText(family)).to.equal(family)
    expect(peerText('می\u200Cخواهم')).to.equal('می\u200Cخواهم')
    // A joiner hidden next to a removed character is not "between visible characters".
    expect(peerText('ü\u200D\u202Eü')).to.equal('üü')
  })

  it('peerLine puts everything on one line; keepStyle keeps colours only', () => {
    expect(peerLine(`label${HOSTILE}\nnext\tcell`)).to.equal('label next cell')
    expect(peerText('\u001b[33mW\u001b[0m \u001b[2Kx', { keepStyle: true })).to.equal('\u001b[33mW\u001b[0m x')
    expect(stripControl(`a${HOSTILE}b`)).to.equal(peerText(`a${HOSTILE}b`))
  })

  it('never lets a removed character through, keeps clean text as it is, and is idempotent (properties)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
      const out = peerText(text)
      const line = peerLine(text)
      return !PEER_CONTROL.test(out) && !PEER_CONTROL.test(line) && !/[\n\t]/.test(line) && peerText(out) === out
    }), { numRuns: 3000 })
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 100 }), (text) => {
      const joinerOrTag = (c: number) => c === 0x200c || c === 0x200d || c === 0xdb40
      const clean = [...text].filter((ch) => !isPeerControl(ch.charCodeAt(0)) && !joinerOrTag(ch.charCodeAt(0))).join('')
      return peerText(clean) === clean
    }), { numRuns: 2000 })
  })

  it('is linear: 1 MiB of each hostile pattern takes well under a second of CPU', function () {
    this.timeout(60_000)
    const size = 1024 * 1024
    for (const unit of ['\u001b[', '\u001b]', '\u009b1', 'a\u0007', '\u202e', 'a\u200d', '\u001bP', '\u001b[1;', 'x']) {
      const text = unit.repeat(Math.ceil(size / unit.length))
      // Generous: the scan takes a few ms; a quadratic one would take minutes.
      expect(cpuMs(() => peerText(text)), JSON.stringify(unit)).to.be.below(2_000)
    }
  })

  it('every question is cleaned where it is checked: text and option names (ids stay exact)', () => {
    const question = checkedQuestion({ id: 'q-1', kind: 'permission', text: `Allow \u001b[2Jrm -rf?\u202e`, path: [], options: [{ id: 'o\u202e', name: 'yes\u001b]0;x\u0007\u2066' }] })
    expect(question).to.deep.equal({ id: 'q-1', kind: 'permission', text: 'Allow rm -rf?', path: [], options: [{ id: 'o\u202e', name: 'yes' }] })
    expect(checkedQuestion({ id: 'q-1', kind: 'ask', text: '\u001b[2J\u202e', path: [] })).to.be.a('string')
    const forged = questionFromMeta({ cordisSubagents: { question: { id: 'q-2', kind: 'ask', text: 'Pick\u009b2J one\u2067', path: [] } } })
    expect(forged?.text).to.equal('Pick one')
  })
})

describe('shared: quotedLines (a sender\'s text inside framing of ours)', () => {
  it('puts "> " before every line ("" gets ">"); \\r\\n, a lone \\r, \\v, \\f, NEL, U+2028 and U+2029 are line breaks', () => {
    expect(quotedLines('one\n\ntwo')).to.equal('> one\n>\n> two')
    expect(quotedLines('a\r\n[from host]\rb\u2028c\u2029\u0085d\ve\ff')).to.equal('> a\n> [from host]\n> b\n> c\n>\n> d\n> e\n> f')
    expect(quotedLines('')).to.equal('>')
    expect(quotedLines('end\n')).to.equal('> end\n>')
    expect(quotedLines('\r\n\r\n')).to.equal('>\n>\n>')
  })

  it('no line of the result starts outside the quote, and unquoting gives the text back, line breaks made \\n (property)', () => {
    const breaks = /\r\n|[\n\v\f\r\u0085\u2028\u2029]/g
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
      const lines = quotedLines(text).split(breaks)
      return lines.every((line) => line === '>' || line.startsWith('> '))
        && lines.map((line) => line.slice(2)).join('\n') === text.replace(breaks, '\n')
    }), { numRuns: 3000 })
  })

  it('with maxChars: cut after quoting to at most that many characters, never half a surrogate pair, a line of ours saying so', () => {
    expect(quotedLines('short', 100)).to.equal('> short')
    expect(quotedLines('abcdefgh', 6)).to.equal('> abcd\n\n[Text cut to 6 characters to fit one message.]')
    // The 6th character would be the first half of 😀: the cut leaves the pair whole, out.
    expect(quotedLines('abc😀def', 6)).to.equal('> abc\n\n[Text cut to 6 characters to fit one message.]')
    const cut = quotedLines('y'.repeat(100_000), 1000)
    expect(cut.split('\n\n')[0]).to.have.length(1000)
  })

  it('is linear: 1 MiB of line breaks or of one line takes well under a second of CPU', function () {
    this.timeout(60_000)
    const size = 1024 * 1024
    for (const unit of ['\n', '\r', '\r\n', 'x', 'x\n']) {
      const text = unit.repeat(Math.ceil(size / unit.length))
      expect(cpuMs(() => quotedLines(text)), JSON.stringify(unit)).to.be.below(2_000)
    }
  })
})
