import { CodedError } from '@cordis-subagents/shared'

/** `SECTION_INVALID`: a section's value is refused by its component's schema; that section does not load, the others do. */
export type KoishiSubagentsErrorCode = 'SECTION_INVALID'

export class KoishiSubagentsError extends CodedError<KoishiSubagentsErrorCode> {
  override name = 'KoishiSubagentsError'
}
