import type { Handshake } from './handshake.js'
import { EXIT_STATUS_MS } from './handshake.js'
import { raceTimeout } from './agent-streams.js'
import type { AgentProcess, ExitInfo } from './process.js'
import { agentError, describeRequestError, isAuthError, MAX_MESSAGE_BYTES, type Sdk } from './sdk.js'

/** How a prompt turn that threw ends: the process died (its exit status), or a headline for an `error` result. */
export type TurnFailure = { exit: ExitInfo } | { headline: string; hurry: boolean }

/**
 * Why a prompt turn threw: a JSON-RPC error answer (the turn failed, the connection did not;
 * `[ACP_AUTH_REQUIRED]` when it asks for a login), a message over the size limit, the process's
 * death (when its exit status arrives within EXIT_STATUS_MS), or a broken connection. `hurry`:
 * the process misbehaved, so its teardown skips the polite wait.
 */
export async function turnFailure(error: unknown, sdk: Sdk, link: Handshake, proc: AgentProcess): Promise<TurnFailure> {
  if (error instanceof sdk.RequestError) {
    const headline = isAuthError(error)
      ? `[ACP_AUTH_REQUIRED] ${link.authGuidance(error)}`
      : `The agent answered session/prompt with an error: ${describeRequestError(error)}.`
    return { headline, hurry: false }
  }
  const tooLarge = (error as Error)?.name === 'MessageTooLargeError'
  const exit = tooLarge ? undefined : await raceTimeout(proc.settledExit, EXIT_STATUS_MS)
  if (exit) return { exit }
  return {
    hurry: true,
    headline: tooLarge
      ? `The agent sent a single ACP message larger than ${MAX_MESSAGE_BYTES} bytes (the per-message limit); the run was stopped.`
      : `The ACP connection to the agent failed during the prompt: ${agentError(error)}.`,
  }
}
