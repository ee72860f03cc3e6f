/// <reference types="mocha" />
// A configured token is sent by clients in `Authorization: Bearer <token>` as it is, and read back as one run of
// non-space characters: a token with a space, or outside printable ASCII, used to load fine and then every request was
// refused 401 "wrong token". The load refuses it now (serve-a2a's and the console's rule), never showing the value.
import { expect } from 'chai'
import { Context } from 'cordis'
import { McpServe } from '@cordis-subagents/serve-mcp'

const load = (token: string) => () => new McpServe(new Context(), McpServe.Config({ tools: ['subagent'], token } as never))

describe('serve-mcp: the configured token', () => {
  const tokens: Array<[token: string, part: string]> = [
    ['correct horse battery staple', 'horse'], [' padded-token-value-1234 ', 'padded-token'], ['tab\tseparated-token', 'separated-token'],
    ['pässwörd-ünicode-token', 'ünicode'], ['x'.repeat(4097), 'xxxxxxxx'],
  ]
  for (const [token, part] of tokens) {
    it(`${JSON.stringify(token.slice(0, 40))} fails the load with MCP_SERVE_INVALID_CONFIG, without showing it`, () => {
      let refused: unknown
      try {
        load(token)()
      } catch (error) {
        refused = error
      }
      expect(refused).to.have.property('code', 'MCP_SERVE_INVALID_CONFIG')
      const { message } = refused as Error
      expect(message).to.match(/serve-mcp: token must be 1-4096 printable ASCII characters without spaces.*leave it out/)
      expect(message).to.not.include(part)
    })
  }

  it('printable ASCII without spaces (and no token: one is generated) loads', () => {
    expect(load('spec-token-0123456789_~!#$%&*+-./:;<=>?@[]^`{|}')).to.not.throw()
    expect(load('')().token).to.match(/^[\w-]{43}$/)
  })
})
