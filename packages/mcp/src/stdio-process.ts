import { type ChildProcess, spawn } from 'node:child_process'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js'
import { trackGroup } from './live-groups.js'

export interface StdioLaunch {
  command: string
  args: string[]
  cwd: string
  env: Record<string, string>
  /** Largest message line the server may send (bytes); a longer one closes the connection. */
  maxMessageBytes: number
  /** Between closing stdin / SIGTERM / SIGKILL of the server's process group. */
  killGrace: number
  /** The last bytes of stderr are kept for diagnostics (never logged whole). */
  onStderr(chunk: string): void
}

/**
 * The MCP stdio transport, with the server in its own process group: closing ends stdin, then
 * SIGTERMs and SIGKILLs the whole group (a server launched through `npx` or a shell has children),
 * and `close()` resolves only once the server process has been reaped.
 */
export class StdioProcess implements Transport {
  onmessage?: (message: JSONRPCMessage) => void
  onclose?: () => void
  onerror?: (error: Error) => void

  private child?: ChildProcess
  private readonly buffer: ReadBuffer
  private exited?: Promise<void>
  /** How the process ended, once it has: for the load's diagnostic. */
  exit?: { code: number | null; signal: NodeJS.Signals | null }

  constructor(private readonly launch: StdioLaunch, Buffer: typeof ReadBuffer, private readonly serialize: (m: JSONRPCMessage) => string) {
    this.buffer = new Buffer({ maxBufferSize: launch.maxMessageBytes })
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
      this.exited = new Promise((done) => child.once('close', (code, signal) => {
        untrack()
        this.exit = { code, signal }
        done()
        this.onclose?.()
      }))
      child.once('error', (error) => {
        reject(error)
        this.onerror?.(error)
      })
      child.once('spawn', () => resolve())
      child.stdin!.on('error', (error) => this.onerror?.(error))
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.launch.onStderr(chunk))
      child.stdout!.on('data', (chunk: Buffer) => {
        try {
          this.buffer.append(chunk)
        } catch (error) {
          this.onerror?.(error as Error)
          void this.close()
          return
        }
        for (;;) {
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
      })
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    if (!stdin || !stdin.writable || this.exit) return Promise.reject(new Error('the MCP server process is not running'))
    return new Promise((resolve) => {
      if (stdin.write(this.serialize(message))) resolve()
      else stdin.once('drain', resolve)
    })
  }

  /** Ends stdin, then SIGTERM, then SIGKILL to the group; resolves once the process is reaped. */
  async close(): Promise<void> {
    const child = this.child
    if (!child || !this.exited) return
    if (!this.exit) {
      child.stdin?.end()
      if (!await settlesWithin(this.exited, this.launch.killGrace)) {
        this.signal(child, 'SIGTERM')
        if (!await settlesWithin(this.exited, this.launch.killGrace)) this.signal(child, 'SIGKILL')
      }
    }
    // A server that left grandchildren in its group gets them stopped too.
    this.signal(child, 'SIGKILL')
    await this.exited
    this.buffer.clear()
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

function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    void promise.then(() => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}
