/**
 * Invisible formatting characters: zero-width ones (U+200B–U+200D, U+2060–U+2064, U+FEFF), and
 * bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E–U+200F, U+202A–U+202E,
 * U+2066–U+2069). In text a model or a person reads they hide or reorder what is really there
 * ("evil\u202Etxt.exe" shows as "evilexe.txt").
 */
const INVISIBLE = /[\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g

/** `text` without invisible formatting characters (linear, one pass). */
export function stripInvisible(text: string): string {
  return text.replace(INVISIBLE, '')
}
