import { spawn, type ChildProcess } from 'node:child_process'
import { groupAlive, registerGroup, unregisterGroup } from './containment/groups.js'
import { type RunAs, setprivArgs } from './containment/run-as.js'
import type { Readable } from 'node:stream'
import { ChildWarnings, signalStrays, strayAlive, straysOutsideGroup, type Strays } from '@cordis-subagents/shared'
import {
  cgroupPopulated, createRunCgroup, findExecutable, killCgroup, releaseCgroup, signalCgroup, wrapInCgroup, wrapperExecFailure,
} from './containment/cgroup.js'
import { boundedInput, countBytes, raceTimeout, streamClosed } from './agent-streams.js'
import { StderrLines } from './stderr-lines.js'

export interface ExitInfo {
  code: number | null
  signal: NodeJS.Signals | null
  /** Set when the process could not be started at all. */
  error?: NodeJS.ErrnoException
}

export interface SpawnOptions {
  command: string
  args: string[]
  cwd: string
  env: Record<string, string>
  /** Bytes of stderr kept (the tail). */
  stderrLimit?: number
  /**
   * Called with each complete stderr line (and a final partial one, once stderr ended or the exit's drain passed), at
   * most 500 lines per process, each decoded whole and cut to 2,000 characters (`StderrLines`). Only asked for while
   * `wantStderrLines()` says so (e.g. debug logging is on), so a flood costs no line splitting when nobody reads the lines.
   */
  onStderrLine?: (line: string) => void
  wantStderrLines?: () => boolean
  /**
   * Called with each stderr line that carries a code the child meant for its parent (`RELAYED_CODES`
   * of shared, e.g. a failed trace export), whatever `wantStderrLines` says; at most 16 per process.
   */
  onWarningLine?: (line: string) => void
  /** How long after the exit its last output may take to arrive (default 200 ms). */
  drainMs?: number
  /** Stdout bytes after which `onStdoutLimit` is called once and stdout is no longer read. */
  maxStdoutBytes?: number
  onStdoutLimit?: (limit: number) => void
  /** Bytes that may wait for the agent to read them (beyond the largest message) before `onInputBacklog` is called once. */
  maxInputBacklog?: number
  onInputBacklog?: (limit: number) => void
  /** `process-group` only, or `auto`: also a cgroup v2 per process where the host may create one. */
  containment?: 'auto' | 'process-group'
  /** Run the agent as this unprivileged user (the host is root): see run-as.ts. */
  runAs?: RunAs
}

export interface TerminateOptions {
  /** Wait this long for the process to exit by itself (after stdin closes) before SIGTERM. */
  grace: number
  /** Wait this long after SIGTERM before SIGKILL. */
  killGrace: number
}

const STDERR_LIMIT = 64 * 1024
/** After SIGKILL only an uninterruptible process can linger; do not wait for it forever. */
const KILL_WAIT = 5000
const POLL = 25
const DRAIN_MS = 200

/**
 * One agent subprocess in its own process group (spawned `detached`, so its pid is the group
 * id) and, where the host may create one, its own cgroup v2 (which also holds processes that
 * leave the group): stdout for the protocol (counted), stderr drained into a ring buffer,
 * teardown by group (and cgroup) signals.
 */
export class AgentProcess {
  readonly child: ChildProcess
  readonly pid: number | undefined
  /** The run's cgroup v2 directory, when the process runs in one (see cgroup.ts). */
  readonly cgroup: string | null
  /** stdout as counted against `maxStdoutBytes`: read the protocol from here. */
  readonly stdout: Readable
  /** stdin bounded by `maxInputBacklog`: write the protocol here. */
  readonly input: WritableStream<Uint8Array>
  /** Settles once the leader exited (or failed to spawn). */
  readonly exited: Promise<ExitInfo>
  /** Settles once stdout ended or closed. */
  readonly stdoutClosed: Promise<void>
  /**
   * Settles once the leader exited and its stdout and stderr were read to the end, or
   * `drainMs` after the exit (a grandchild may hold the pipes open).
   */
  readonly settledExit: Promise<ExitInfo>
  exit?: ExitInfo

  private readonly stderrChunks: Buffer[] = []
  private stderrBytes = 0
  private stderrTotal = 0
  private readonly stderrLimit: number
  /** Stderr as log lines, for `onStderrLine`. */
  private readonly stderrLines?: StderrLines
  private termination?: Promise<void>
  /** Descendants outside the group (and maybe the cgroup), found when teardown began: stopped with the group. */
  private strays: Strays = new Map()

  constructor(private readonly options: SpawnOptions) {
    this.stderrLimit = options.stderrLimit ?? STDERR_LIMIT
    if (options.onStderrLine) this.stderrLines = new StderrLines(options.onStderrLine)
    let { command, args } = options
    // Enter a cgroup only for a command that exists, so a missing one still fails with ENOENT.
    const executable = options.containment !== 'process-group' ? findExecutable(command, options.env, options.cwd) : undefined
    const { runAs } = options
    // With runAs the wrapper must drop to the user after entering the cgroup (as root): setpriv does.
    this.cgroup = executable && (!runAs || runAs.setpriv) ? createRunCgroup() : null
    if (this.cgroup) {
      const inner = runAs?.setpriv ? setprivArgs(runAs.setpriv, runAs, executable!, args) : { command: executable!, args }
      ;({ command, args } = wrapInCgroup(this.cgroup, inner.command, inner.args))
    }
    // No shell parses the command: it and its arguments go to execve as they are.
    try {
      this.child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
        // Without a cgroup, Node switches the user itself (and drops supplementary groups).
        ...runAs && !this.cgroup ? { uid: runAs.uid, gid: runAs.gid } : {},
      })
    } catch (error) {
      if (this.cgroup) releaseCgroup(this.cgroup)
      throw error
    }
    this.pid = this.child.pid
    if (this.pid !== undefined) registerGroup(this.pid, this.cgroup)
    else if (this.cgroup) releaseCgroup(this.cgroup)

    const { child } = this
    this.exited = new Promise<ExitInfo>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }))
      child.on('error', (error: NodeJS.ErrnoException) => {
        // 'error' also reports failed kill()s of a live process; only a failed spawn ends it.
        if (child.pid === undefined) resolve({ code: null, signal: null, error })
      })
    }).then((exit) => {
      this.exit = exit
      return exit
    })
    const output = countBytes(child.stdout!, options.maxStdoutBytes ?? Infinity, (limit) => options.onStdoutLimit?.(limit))
    this.stdout = output.stream
    // An agent that does not read what it is sent is not heard any more either (its requests would be answered).
    this.input = boundedInput(child.stdin!, options.maxInputBacklog ?? Infinity, (limit) => {
      output.stop()
      options.onInputBacklog?.(limit)
    })
    this.stdoutClosed = streamClosed(child.stdout!)
    const stderrClosed = streamClosed(child.stderr!)
    this.settledExit = this.exited.then(async (exit) => {
      await raceTimeout(Promise.all([this.stdoutClosed, stderrClosed]), options.drainMs ?? DRAIN_MS)
      // The last line without a newline: all of it, not what had come by the exit (which could end inside a character).
      this.stderrLines?.end()
      // The cgroup wrapper could not exec the command (its short message is all of stderr): the spawn failure a direct spawn reports.
      const failed = this.cgroup && this.stderrTotal < 4096 ? wrapperExecFailure(this.cgroup, exit, this.stderrTail()) : undefined
      if (failed) exit.error = failed
      return exit
    })
    // A dead or closing child makes these streams error (EPIPE and the like); never let that
    // become an uncaught 'error' event in the host.
    child.stdin!.on('error', () => {})
    child.stdout!.on('error', () => {})
    child.stderr!.on('error', () => {})
    child.stderr!.on('data', (chunk: Buffer) => this.pushStderr(chunk))
    if (options.onWarningLine) {
      const warnings = new ChildWarnings(options.onWarningLine)
      child.stderr!.on('data', (chunk: Buffer) => warnings.push(chunk))
      child.stderr!.once('end', () => warnings.end())
    }
  }

  /** Total stderr bytes seen (not only the kept tail). */
  get stderrSeen(): number {
    return this.stderrTotal
  }

  /** The kept tail of stderr (at most `stderrLimit` bytes), decoded; it starts on a character, never inside one. */
  stderrTail(): string {
    const kept = Buffer.concat(this.stderrChunks)
    let start = 0
    // A tail cut from a longer stderr may start with the last bytes of a character (10xxxxxx): they are no character.
    if (this.stderrTotal > kept.length) while (start < 3 && (kept[start] & 0xc0) === 0x80) start++
    return kept.subarray(start).toString('utf8')
  }

  private pushStderr(chunk: Buffer) {
    this.stderrTotal += chunk.length
    this.stderrChunks.push(chunk)
    this.stderrBytes += chunk.length
    while (this.stderrBytes > this.stderrLimit && this.stderrChunks.length) {
      const excess = this.stderrBytes - this.stderrLimit
      const first = this.stderrChunks[0]
      if (first.length <= excess) {
        this.stderrChunks.shift()
        this.stderrBytes -= first.length
      } else {
        this.stderrChunks[0] = first.subarray(excess)
        this.stderrBytes -= excess
      }
    }
    const lines = this.stderrLines
    if (!lines || lines.full) return
    if (this.options.wantStderrLines && !this.options.wantStderrLines()) lines.drop()
    else lines.push(chunk)
  }

  /** Ends the child's stdin (the polite "we are done" for a stdio agent). */
  closeStdin() {
    const { stdin } = this.child
    if (stdin && !stdin.destroyed) stdin.end()
  }

  /**
   * Sends `signal` to the whole process group and, with a cgroup, to every process in it (which
   * reaches those that left the group); false when the group no longer exists.
   */
  signalGroup(signal: NodeJS.Signals): boolean {
    if (this.pid === undefined) return false
    if (this.cgroup) {
      if (signal === 'SIGKILL') killCgroup(this.cgroup)
      else signalCgroup(this.cgroup, signal)
    }
    try {
      process.kill(-this.pid, signal)
      return true
    } catch {
      return false
    }
  }

  /** True once the leader has exited and no live process is left in its group (or its cgroup), nor a stray. */
  async quiet(): Promise<boolean> {
    if (this.pid === undefined) return true
    if (!this.exit) return false
    if (this.cgroup && cgroupPopulated(this.cgroup)) return false
    if (await groupAlive(this.pid)) return false
    for (const [pid, start] of this.strays) {
      if (await strayAlive(pid, start)) return false
      this.strays.delete(pid)
    }
    return true
  }

  /** The group (and cgroup) signal, plus the strays by pid. */
  private async signalAll(signal: NodeJS.Signals) {
    this.signalGroup(signal)
    if (this.strays.size) await signalStrays(this.strays, signal)
  }

  /** Until the process is quiet (true) or `ms` passed (false); in-process time, so a wall-clock step moves neither. */
  private async waitQuiet(ms: number): Promise<boolean> {
    const deadline = performance.now() + ms
    if (!this.exit) await raceTimeout(this.exited, ms)
    while (!(await this.quiet())) {
      const left = deadline - performance.now()
      if (left <= 0) return false
      await sleep(Math.min(POLL, left))
    }
    return true
  }

  /**
   * Stops the process group and resolves once the leader exited and the group is empty:
   * close stdin → wait `grace` → SIGTERM the group → wait `killGrace` → SIGKILL → wait.
   * Idempotent: every caller gets the same promise.
   */
  terminate(options: TerminateOptions): Promise<void> {
    return this.termination ??= this.runTermination(options)
  }

  private async runTermination({ grace, killGrace }: TerminateOptions): Promise<void> {
    try {
      // Before stdin closes (the agent may exit at EOF, and its children then belong to init):
      // descendants that left the group, and perhaps the cgroup, are still ours to find.
      if (this.pid !== undefined && !this.exit) this.strays = straysOutsideGroup(this.pid, this.pid)
      this.closeStdin()
      if (this.pid === undefined) return
      if (grace > 0 && await this.waitQuiet(grace)) return
      if (await this.quiet()) return
      await this.signalAll('SIGTERM')
      if (await this.waitQuiet(killGrace)) return
      await this.signalAll('SIGKILL')
      await this.waitQuiet(KILL_WAIT)
    } finally {
      // The leader exited and nothing is left in the cgroup (nor below it): the group is done, whether or not the cgroup's
      // directory can go yet (a nested one a served host left behind is removed with it, else it is retried later).
      if (this.pid !== undefined && this.exit && (!this.cgroup || !cgroupPopulated(this.cgroup))) {
        if (this.cgroup) releaseCgroup(this.cgroup)
        unregisterGroup(this.pid)
      }
      this.stdout.destroy()
      this.child.stdout?.destroy()
      this.child.stderr?.destroy()
      this.child.stdin?.destroy()
    }
  }
}

/** "exited with code 3" / "was killed by SIGKILL" / "could not be started (ENOENT)". */
export function describeExit(exit: ExitInfo): string {
  if (exit.error) return `could not be started (${exit.error.code ?? exit.error.message})`
  if (exit.signal) return `was killed by ${exit.signal}`
  return `exited with code ${exit.code}`
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
