/** The digest dist/ is stamped with (client-digest.mjs). */
export function sourceDigest(root: string): string
