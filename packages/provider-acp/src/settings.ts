import type * as Acp from '@agentclientprotocol/sdk'
import type { Logger } from 'cordis'
import type { Redactor, ToldRelay } from '@cordis-subagents/shared'
import type { PermissionMode } from './permission.js'
import type { AcpCheckpoint } from './resume/restore-point.js'
import type { Reaps } from './reaps.js'
import type { RunAs } from './containment/run-as.js'
import type { ForkSeed } from './fork/seed.js'
import type { SdkConsoleHold } from './sdk-log.js'

/** Everything one run needs from the provider's config and the request, resolved. */
export interface RunSettings {
  providerName: string
  command: string
  args: string[]
  env: Record<string, string>
  cwd: string
  permission: PermissionMode
  /** With `permission: escalate` (and a served host's question): how long a question may wait for an answer. */
  maxParkedMs: number
  startupTimeout: number
  cancelGrace: number
  killGrace: number
  mcpServers: Acp.McpServer[]
  logger: Logger
  redactor: Redactor
  /** After the turn ended and stdin closed: how long the agent may take to exit before SIGTERM. */
  exitGrace: number
  /** Message text kept during the turn (UTF-8 bytes). */
  maxOutputBytes: number
  /** Protocol bytes (stdout) one run may send; more ends the run as an error. */
  maxStreamBytes: number
  containment: 'auto' | 'process-group'
  /** The unprivileged user the agent runs as (config `runAs`, resolved at load). */
  runAs?: RunAs
  /** Sent as `_meta` of `session/new` (the depth and the tool ceiling). */
  sessionMeta?: Record<string, unknown>
  /** Sent as `_meta` of `session/prompt` (the delegation's trace context), when set. */
  promptMeta?: Record<string, unknown>
  /** Continue this earlier session (session/resume, else session/load) when the agent can. */
  resumeSessionId?: string
  /** A fork child (`context: fork`): the parent's turns its first prompt carries, less what a forked or continued session holds. */
  fork?: ForkSeed
  /** A parent may continue this run's session later (resume is on): a kept process does not close it. */
  keepSession?: boolean
  /**
   * A run restored after a restart (`provider.restore`): `resumeSessionId` must be loaded (no new
   * session instead), and a parked run waits for the answer to its question before it prompts.
   */
  restore?: AcpCheckpoint
  /** Posts a served child's `tell_parent` messages to the delegating agent (when the request asked for `tellParent`). */
  told?: ToldRelay
  /** The provider's background teardowns; without it a run's dispose waits for its own. */
  reaps?: Reaps
  /** The provider's end of the ACP SDK's console: each process holds it while it lives (see sdk-log.ts). */
  sdkConsole?: SdkConsoleHold
}
