import { type ChildProcess, spawn } from 'node:child_process'
import type { Readable } from 'node:stream'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js'
import { signalStrays, type Strays, straysOutsideGroup } from '@cordis-subagents/shared'
import { McpError } from './errors.js'
import { trackGroup } from './live-groups.js'

/**
 * After the server process exits, how long what it already wrote may still be read: a process it
 * started may hold the pipes open for good, so the end of the pipes is not awaited past this.
 */
const EXIT_DRAIN_MS = 500
/**
 * The most messages that may wait unread in a server's stdin. Each costs far more memory than its bytes (an answer to a
 * server's ping holds the SDK's request state until written: some 5 KiB), so a deaf server flooding pings is cut off here.
 */
const MAX_UNREAD_MESSAGES = 1024

export interface StdioLaunch {
  command: string
  args: string[]
  cwd: string
  env: Record<string, string>
  /**
   * Largest message line the server may send (bytes), and the most bytes that may wait unread in its
   * stdin (one larger message is let through an empty queue); past either, the server is stopped.
   */
  maxMessageBytes: number
  /** Between closing stdin / SIGTERM / SIGKILL of the server's process group. */
  killGrace: number
  /** The last bytes of stderr are kept for diagnostics (never logged whole). */
  onStderr(chunk: string): void
}

/**
 * The MCP stdio transport, with the server in its own process group: closing ends stdin, then
 * SIGTERMs and SIGKILLs the whole group (a server launched through `npx` or a shell has children),
 * and `close()` resolves only once the server process has been reaped. The server counts as gone
 * when its main process exits (what it wrote is read for at most `EXIT_DRAIN_MS` more), or when
 * it breaks a bound (`maxMessageBytes` either way): then its group is stopped and the pipes closed.
 */
export class StdioProcess implements Transport {
  onmessage?: (message: JSONRPCMessage) => void
  onclose?: () => void
  onerror?: (error: Error) => void

  private child?: ChildProcess
  private readonly buffer: ReadBuffer
  /** Settles once the main process exited (or failed to spawn). */
  private exited?: Promise<void>
  /** Settles once the process exited, the pipes were drained (bounded) and closed, and the group was killed. */
  private finished?: Promise<void>
  private closing?: Promise<void>
  private ended = false
  /** Why the server was given up on while it ran (a bound it broke). */
  private lost?: string
  /** The one wait for stdin to drain that every send past its high-water mark shares. */
  private drained?: Promise<void>
  /** Messages written to stdin and not yet taken by the pipe. */
  private unread = 0
  /** Bytes of the message line the server has begun and not ended yet. */
  private openLine = 0
  /** Descendants that had left the server's group when its stop began (a `setsid` child): killed with the group. */
  private strays?: Strays
  /** How the process ended, once it has: for the load's diagnostic. */
  exit?: { code: number | null; signal: NodeJS.Signals | null }

  constructor(private readonly launch: StdioLaunch, Buffer: typeof ReadBuffer, private readonly serialize: (m: JSONRPCMessage) => string) {
    // The SDK's bound counts the unread line plus the whole chunk just read; `lineFits` bounds the line itself.
    this.buffer = new Buffer({ maxBufferSize: Infinity })
  }

  get pid(): number | undefined {
    return this.child?.pid
  }

  start(): Promise<void> {
    if (this.child) throw new Error('StdioProcess already started')
    return new Promise((resolve, reject) => {
      const child = spawn(this.launch.command, this.launch.args, {
        cwd: this.launch.cwd, env: this.launch.env, stdio: ['pipe', 'pipe', 'pipe'], detached: process.platform !== 'win32', shell: false, windowsHide: true,
      })
      this.child = child
      const untrack = child.pid ? trackGroup(child.pid) : () => {}
      this.exited = new Promise((done) => {
        child.once('exit', (code, signal) => {
          this.exit = { code, signal }
          done()
        })
        // A failed spawn has no 'exit'; 'error' also reports a failed kill() of a live process.
        child.on('error', () => {
          if (child.pid === undefined) done()
        })
      })
      this.finished = this.exited.then(async () => {
        await settlesWithin(Promise.all([closed(child.stdout!), closed(child.stderr!)]).then(() => {}), EXIT_DRAIN_MS)
        // What the server left in its group goes with it, and so do the strays its stop found; a process that left the
        // group no longer holds the pipes for us.
        this.signal(child, 'SIGKILL')
        if (this.strays?.size) await signalStrays(this.strays, 'SIGKILL')
        untrack()
        destroyPipes(child)
        this.end()
      })
      child.once('error', (error) => {
        reject(error)
        this.onerror?.(error)
      })
      child.once('spawn', () => resolve())
      child.stdin!.on('error', (error) => this.onerror?.(error))
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.launch.onStderr(chunk))
      child.stdout!.on('data', (chunk: Buffer) => this.read(chunk))
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    const notRunning = () => Promise.reject(new Error('the MCP server process is not running'))
    if (!stdin || this.ended) return notRunning()
    // Exited: it is reported closed within EXIT_DRAIN_MS, which fails the calls waiting on it with the exit status.
    if (this.exit) return Promise.resolve()
    if (stdin.destroyed || !stdin.writable) return notRunning()
    const line = Buffer.from(this.serialize(message), 'utf8')
    const queued = stdin.writableLength
    const bound = this.launch.maxMessageBytes
    if (queued > 0 && (queued + line.length > bound || this.unread >= MAX_UNREAD_MESSAGES)) {
      const why = `MCP_SERVER_CLOSED: the MCP server stopped reading its stdin: ${this.unread} messages (${queued} bytes) wait unread there, `
        + `and at most maxMessageBytes (${bound} bytes) and ${MAX_UNREAD_MESSAGES} messages may; the server was stopped. `
        + 'Reload the plugin to start it again, or raise maxMessageBytes for a server that reads large messages slowly.'
      this.lose(why)
      return Promise.reject(new McpError('MCP_SERVER_CLOSED', why))
    }
    this.unread++
    if (stdin.write(line, () => this.unread--)) return Promise.resolve()
    // Closed before draining: the server is gone, and the calls waiting on it fail when it is reported closed.
    return this.drained ??= new Promise((resolve) => {
      const done = () => {
        stdin.off('drain', done)
        stdin.off('close', done)
        this.drained = undefined
        resolve()
      }
      stdin.on('drain', done)
      stdin.on('close', done)
    })
  }

  /**
   * Ends stdin, then SIGTERM, then SIGKILL to the group (`killGrace` apart); resolves once the process is reaped.
   * Not `graceful` (a start given up: the server never served), SIGTERM follows the end of stdin at once.
   */
  close(graceful = true): Promise<void> {
    if (!this.child) return Promise.resolve()
    return this.closing ??= this.stop(this.child, graceful)
  }

  private async stop(child: ChildProcess, graceful: boolean): Promise<void> {
    const { exited, finished } = this
    if (!exited || !finished) return
    if (!this.exit) {
      this.findStrays(child)
      const stdin = child.stdin
      let gone = false
      if (stdin && !stdin.destroyed) {
        stdin.end()
        if (graceful) gone = await settlesWithin(exited, this.launch.killGrace)
      }
      if (!gone) {
        this.signal(child, 'SIGTERM')
        if (!await settlesWithin(exited, this.launch.killGrace)) this.signal(child, 'SIGKILL')
      }
    }
    await finished
    this.buffer.clear()
  }

  private read(chunk: Buffer) {
    if (this.lost) return
    if (!this.lineFits(chunk)) {
      this.lose(`MCP_SERVER_CLOSED: the MCP server wrote a message line over maxMessageBytes (${this.launch.maxMessageBytes} bytes); `
        + 'the server was stopped. Raise maxMessageBytes if its messages are that large.')
      return
    }
    this.buffer.append(chunk)
    while (!this.lost) {
      let message: JSONRPCMessage | null
      try {
        message = this.buffer.readMessage()
      } catch (error) {
        this.onerror?.(error as Error)
        continue
      }
      if (message === null) break
      this.onmessage?.(message)
    }
  }

  /** Whether every line `chunk` ends or continues stays within `maxMessageBytes`; keeps the length of the line it leaves open. */
  private lineFits(chunk: Buffer): boolean {
    const bound = this.launch.maxMessageBytes
    let start = 0
    for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, start)) {
      if (this.openLine + at - start > bound) return false
      this.openLine = 0
      start = at + 1
    }
    this.openLine += chunk.length - start
    return this.openLine <= bound
  }

  /**
   * Gives the server up: its pipes are closed (what was queued for it is dropped), the connection is
   * reported closed at once (so calls in flight fail), and the group is stopped as by `close()`.
   */
  private lose(why: string) {
    if (this.lost || this.ended || !this.child) return
    this.lost = why
    // The diagnostic of the calls in flight and of the log line ends with the stderr tail: say there what happened.
    this.launch.onStderr(`\n[mcp client] ${why}\n`)
    this.findStrays(this.child)
    destroyPipes(this.child)
    this.end()
    void this.close()
  }

  private end() {
    if (this.ended) return
    this.ended = true
    this.onclose?.()
  }

  /**
   * Before the server is told to stop (it may exit at the end of stdin, and its children then belong to init): its
   * descendants outside its group, still ours to find. Once per stop.
   */
  private findStrays(child: ChildProcess) {
    if (this.strays || !child.pid || this.exit || process.platform === 'win32') return
    this.strays = straysOutsideGroup(child.pid, child.pid)
  }

  private signal(child: ChildProcess, signal: NodeJS.Signals) {
    try {
      if (child.pid && process.platform !== 'win32') process.kill(-child.pid, signal)
      else child.kill(signal)
    } catch {
      // already gone
    }
  }
}

function destroyPipes(child: ChildProcess) {
  for (const pipe of [child.stdin, child.stdout, child.stderr]) pipe?.destroy()
}

function closed(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.closed) resolve()
    else stream.once('close', () => resolve())
  })
}

function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    void promise.then(() => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}
