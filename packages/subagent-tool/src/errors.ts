import { CodedError } from '@cordis-subagents/shared'

/**
 * Why this package refused: `INVALID_CONFIG`, a config a plugin entry (the tool, `./control`) refuses at load;
 * `INVALID_OPTIONS`, an option `asTool` refuses; `UNKNOWN_AGENT`, an agent `asTool` cannot find.
 */
type SubagentToolErrorCode = 'INVALID_CONFIG' | 'INVALID_OPTIONS' | 'UNKNOWN_AGENT'

/** An error of subagent-tool and its entries, with a stable `code`; its message says what to fix. */
export class SubagentToolError extends CodedError<SubagentToolErrorCode> {
  override name = 'SubagentToolError'
}
