// The ACP contract check: every JSON-RPC message of a captured transport (test/support/jsonrpc-tee.mjs)
// validated with ajv against the stable v1 `schema.json` that @agentclientprotocol/sdk ships, as the
// message of its side (agent or client) and as the params or result of its method.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'

const require = createRequire(import.meta.url)

/** A captured message: `in` went to the agent (the client sent it), `out` came from the agent. */
export interface Captured {
  dir: 'in' | 'out'
  text: string
}

type Defs = Record<string, { 'x-method'?: string }>

/** Integer formats the schema names (Rust's), checked by range. */
const INTEGER_RANGES: Record<string, [number, number]> = {
  uint16: [0, 0xffff], uint32: [0, 0xffffffff], uint64: [0, Number.MAX_SAFE_INTEGER],
  int32: [-0x80000000, 0x7fffffff], int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
}

export class AcpSchema {
  readonly path: string
  private readonly ajv: Ajv2020
  private readonly defs: Defs
  private readonly sides: Record<'agent' | 'client', ValidateFunction>

  /** `unstable`: the SDK's `schema.unstable.json` (it has `session/fork`), for a flow that uses an unstable method. */
  constructor(which: 'stable' | 'unstable' = 'stable') {
    this.path = require.resolve(`@agentclientprotocol/sdk/schema/v1/${which === 'stable' ? 'schema.json' : 'schema.unstable.json'}`)
    const schema = JSON.parse(readFileSync(this.path, 'utf8')) as { $defs: Defs; anyOf: Array<{ title: string }> }
    this.defs = schema.$defs
    // strict off: the schema carries its generator's annotations (x-method, x-side, discriminator).
    this.ajv = new Ajv2020({ strict: false, allErrors: true })
    for (const [name, [min, max]] of Object.entries(INTEGER_RANGES)) {
      this.ajv.addFormat(name, { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= min && n <= max })
    }
    this.ajv.addFormat('double', { type: 'number', validate: (n: number) => Number.isFinite(n) })
    this.ajv.addFormat('uri', (text: string) => URL.canParse(text))
    this.ajv.addSchema(schema, 'acp')
    const side = (title: string) => this.ajv.compile({ $ref: `acp#/anyOf/${schema.anyOf.findIndex((s) => s.title === title)}` })
    this.sides = { agent: side('Agent'), client: side('Client') }
  }

  /** The `$defs` name of a method's request, notification or response, or undefined when the stable schema has none. */
  defFor(method: string, kind: 'Request' | 'Notification' | 'Response'): string | undefined {
    return Object.keys(this.defs).find((name) => name.endsWith(kind) && this.defs[name]!['x-method'] === method)
  }

  /**
   * Every problem of a capture (empty when each message validates): a line that is not JSON, a
   * message its side's schema refuses, a method the stable schema does not have, params or a result
   * its method's definition refuses, a response to no request. Also returns the methods seen.
   */
  check(captured: readonly Captured[]): { problems: string[]; methods: Set<string> } {
    const problems: string[] = []
    const methods = new Set<string>()
    const asked = new Map<string, string>()
    for (const [index, { dir, text }] of captured.entries()) {
      const where = `#${index} ${dir === 'in' ? 'client → agent' : 'agent → client'}`
      let message: { id?: unknown; method?: string; params?: unknown; result?: unknown; error?: unknown }
      try {
        message = JSON.parse(text)
      } catch {
        problems.push(`${where}: not JSON: ${text.slice(0, 200)}`)
        continue
      }
      const sender = dir === 'in' ? 'client' : 'agent'
      const side = this.sides[sender]
      if (!side(message)) problems.push(`${where}: not a valid ${sender} message: ${this.ajv.errorsText(side.errors)} in ${text.slice(0, 300)}`)
      const hasId = message.id !== undefined && message.id !== null
      if (typeof message.method === 'string') {
        methods.add(message.method)
        const kind = hasId ? 'Request' : 'Notification'
        if (hasId) asked.set(`${sender}:${JSON.stringify(message.id)}`, message.method)
        this.against(problems, where, message.method, kind, message.params ?? {})
      } else if (hasId) {
        const method = asked.get(`${sender === 'client' ? 'agent' : 'client'}:${JSON.stringify(message.id)}`)
        if (!method) problems.push(`${where}: a response to no request (id ${JSON.stringify(message.id)})`)
        else if (message.error !== undefined) this.validate(problems, where, 'Error', message.error)
        else this.against(problems, where, method, 'Response', message.result)
      }
    }
    return { problems, methods }
  }

  private against(problems: string[], where: string, method: string, kind: 'Request' | 'Notification' | 'Response', value: unknown) {
    const def = this.defFor(method, kind)
    if (!def) problems.push(`${where}: ${method} has no ${kind} in the stable schema`)
    else this.validate(problems, where, def, value)
  }

  private validate(problems: string[], where: string, def: string, value: unknown) {
    const validate = this.ajv.getSchema(`acp#/$defs/${def}`)!
    if (!validate(value)) problems.push(`${where}: ${def} refuses it: ${this.ajv.errorsText(validate.errors)} in ${JSON.stringify(value).slice(0, 300)}`)
  }
}

/** The messages a tee wrote to `log`. */
export function readCapture(log: string): Captured[] {
  return readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Captured)
}
