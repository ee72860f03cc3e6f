// The one base of every error class of ours: a stable `code` to branch on (each package names its
// own codes), a message for a person, and an optional cause. Each package keeps its class (`ToolError`,
// `SubagentError`, …) for its codes; `instanceof CodedError` tells any of them from a foreign error.
export class CodedError<Code extends string = string> extends Error {
  override name = 'CodedError'
  readonly code: Code

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}
