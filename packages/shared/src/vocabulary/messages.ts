/**
 * Largest single message between agents, in UTF-16 code units (about 1 MiB of text): a follow-up
 * (`send`), an inbox post, a delivered background result. One cap, so what one layer accepts the
 * next one never refuses.
 */
export const MAX_MESSAGE_LENGTH = 1 << 20
