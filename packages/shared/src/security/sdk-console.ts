/**
 * Routes what a third-party SDK writes with raw `console.error` / `console.warn` (partly peer-chosen text: "Invalid
 * message", ids of unknown responses, a remote's task ids) to a sink of the package that uses the SDK, by the module
 * path in the caller's stack.
 *
 * The ACP SDK and the A2A SDK's client and server report protocol trouble on the console. Each package that uses one
 * registers `{ from, sink }` (`from`: a pattern of the SDK's module path) with `routeSdkConsole` and keeps the returned
 * function to end it. One wrapper per console method serves every registration: a call whose caller (or the caller's
 * caller) is a module `from` matches goes to the first live registration that matches, whose sink can ask for the call's
 * capped text (each string argument cut before formatting, so a 4 MiB argument is never formatted whole; the text cut
 * again after), formatted only then; every other call goes to the console method the wrapper replaced, untouched. The
 * original comes back when the last registration of a method ends, unless someone replaced the wrapper meanwhile (theirs
 * is then left in place).
 */
import { formatWithOptions } from 'node:util'
import { headChars } from '../vocabulary/text.js'

/** The console methods a route may take over (the SDKs report on these; `console.log`, which loggers print with, is never wrapped). */
export type SdkConsoleMethod = 'error' | 'warn' | 'info' | 'debug'

/** One routed console call. */
export interface SdkConsoleCall {
  readonly method: SdkConsoleMethod
  /** The call's text, at most `maxChars` (formatted on the first call; not cleaned: scrub it, and log it under a budget). */
  text(): string
}

/** Receives each routed call; it must not throw (what it throws is dropped). */
export type SdkConsoleSink = (call: SdkConsoleCall) => void

export interface SdkConsoleRoute {
  /** Matched against the file (path, or `file:` URL) of the two stack frames above the console call: the SDK's module path. */
  from: RegExp
  sink: SdkConsoleSink
  /** The console methods routed (default `['error', 'warn']`). */
  methods?: readonly SdkConsoleMethod[]
  /** Characters of text the sink gets at most: each string argument is cut to it before formatting, the text after (default 2,000). */
  maxChars?: number
}

/** The text a routed call whose arguments cannot be formatted (a throwing getter) becomes. */
const UNPRINTABLE = '(an unprintable console message)'
/** How objects among the arguments are shown: shallow, short arrays, on one line. */
const INSPECT = { colors: false, depth: 2, maxArrayLength: 20, breakLength: Infinity } as const
/** Stack frames looked at: the caller of the console method and its caller. */
const FRAMES = 2

interface Live {
  from: RegExp
  sink: SdkConsoleSink
  methods: readonly SdkConsoleMethod[]
  maxChars: number
}

interface Wrapped {
  wrapper: (...args: unknown[]) => void
  original: (...args: unknown[]) => void
}

/** Live routes in registration order. */
const routes: Live[] = []
const wrapped = new Map<SdkConsoleMethod, Wrapped>()
/** Set while a sink runs: what it writes to the console is its own, passed through. */
let inSink = false

/**
 * Routes the console calls of the modules `route.from` matches to `route.sink` until the returned function is called
 * (idempotent). Other calls pass through untouched.
 */
export function routeSdkConsole(route: SdkConsoleRoute): () => void {
  const live: Live = {
    from: route.from, sink: route.sink, methods: [...route.methods ?? ['error', 'warn']],
    maxChars: Math.max(1, Math.floor(route.maxChars ?? 2_000)),
  }
  routes.push(live)
  for (const method of live.methods) install(method)
  return () => {
    const index = routes.indexOf(live)
    if (index < 0) return
    routes.splice(index, 1)
    for (const method of live.methods) if (!routes.some((other) => other.methods.includes(method))) uninstall(method)
  }
}

function install(method: SdkConsoleMethod) {
  if (wrapped.has(method)) return
  const original = console[method] as (...args: unknown[]) => void
  const entry: Wrapped = {
    original,
    wrapper: function sdkConsole(this: unknown, ...args: unknown[]) {
      const route = !inSink && wrapped.get(method) === entry ? routeOf(method, entry.wrapper) : undefined
      if (!route) return Reflect.apply(original, this ?? console, args)
      inSink = true
      let text: string | undefined
      try {
        route.sink({ method, text: () => text ??= cappedText(args, route.maxChars) })
      } catch {
        // A sink must not throw into the SDK's call; what it failed to log is dropped, never printed raw.
      } finally {
        inSink = false
      }
    },
  }
  wrapped.set(method, entry)
  console[method] = entry.wrapper
}

function uninstall(method: SdkConsoleMethod) {
  const entry = wrapped.get(method)
  if (!entry) return
  wrapped.delete(method)
  // Put the original back only if nobody replaced ours meanwhile; a wrapper left in someone's chain passes everything on.
  if (console[method] === entry.wrapper) console[method] = entry.original
}

/** The first live route of `method` whose pattern matches a frame above the console call, if any. */
function routeOf(method: SdkConsoleMethod, wrapper: (...args: unknown[]) => void): Live | undefined {
  if (!routes.some((route) => route.methods.includes(method))) return undefined
  const files = callerFiles(wrapper)
  return routes.find((route) => route.methods.includes(method) && files.some((file) => {
    route.from.lastIndex = 0
    return route.from.test(file)
  }))
}

/**
 * The files of the `FRAMES` frames above `wrapper`, the caller first. Read from the call sites, not from a formatted stack: a
 * source-map hook (`--enable-source-maps`, tsx) formats each stack at some 40 µs, and would name the sources, not the module.
 */
function callerFiles(wrapper: (...args: unknown[]) => void): string[] {
  const holder: { stack?: unknown } = {}
  const { stackTraceLimit, prepareStackTrace } = Error
  let sites: unknown
  try {
    Error.stackTraceLimit = FRAMES
    Error.prepareStackTrace = (_error, callSites) => callSites
    Error.captureStackTrace(holder, wrapper)
    sites = holder.stack
  } finally {
    Error.stackTraceLimit = stackTraceLimit
    Error.prepareStackTrace = prepareStackTrace
  }
  if (!Array.isArray(sites)) return []
  return sites.map((site: NodeJS.CallSite) => String(site.getFileName?.() ?? site.getScriptNameOrSourceURL?.() ?? ''))
}

/** The call's text, at most `maxChars`: strings cut before formatting, an `Error` as its name and (cut) message. */
function cappedText(args: unknown[], maxChars: number): string {
  try {
    const cut = args.map((arg) => {
      if (typeof arg === 'string') return headChars(arg, maxChars, '…')
      return arg instanceof Error ? errorText(arg, maxChars) : arg
    })
    const text = formatWithOptions({ ...INSPECT, maxStringLength: maxChars }, ...cut)
    return headChars(text, maxChars, '…')
  } catch {
    return UNPRINTABLE
  }
}

/** `Name: message`, the message cut to `maxChars` (a stack would repeat a peer's message whole). */
function errorText(error: Error, maxChars: number): string {
  return headChars(`${String(error.name)}: ${String(error.message)}`, maxChars, '…')
}
