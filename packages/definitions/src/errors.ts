import { CodedError } from '@cordis-subagents/shared'

/** Why a definition (or the entry that holds it) was refused. Each fails its whole entry at load. */
export type DefinitionErrorCode =
  /** A field is missing or malformed (a name, `does`, `uses`, `budget`, both `soul` and `soulFile`, …). */
  | 'INVALID_DEFINITION'
  /** The name is defined already, by another entry or another file. */
  | 'DUPLICATE_AGENT'
  /** A `team` names an agent that is neither in this entry nor defined already. */
  | 'UNKNOWN_TEAM_MEMBER'
  /** The team graph has a cycle that no `budget.maxDepth` on it bounds. */
  | 'TEAM_CYCLE'
  /** `soulFile` does not exist, is not a file, is empty, or is larger than the cap. */
  | 'SOUL_FILE'
  /** A Claude Code agent file cannot be read or parsed (front matter, YAML). */
  | 'AGENT_FILE'
  /** A Claude Code agents directory holds more entries (of any kind) than a read looks through. */
  | 'AGENT_DIR_TOO_LARGE'

export class DefinitionError extends CodedError<DefinitionErrorCode> {
  override name = 'DefinitionError'
}
