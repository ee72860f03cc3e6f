import { readFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { bearerToken, headChars, sameSecret } from '@cordis-subagents/shared'
import { MAX_TOKEN_LENGTH } from './config.js'
import { ConsoleError, STATUS } from './errors.js'
import { answerRun, cancelRun, sendToRun } from './actions.js'
import type { LiveHub } from './live.js'
import { snapshot } from './live.js'
import type { ViewHost } from './node-view.js'
import { pageJson } from './page-json.js'
import { transcriptOf } from './model.js'
import { MAX_PAGE } from './transcript.js'

/** Largest POST body read (a message to a child), bytes. */
const MAX_BODY_BYTES = 64 << 10

/** The page: static files, no data in them (the data is behind the token). */
const PAGE_DIR = new URL('../page/', import.meta.url)
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
}
const assets = new Map(Object.entries(ASSETS).map(([path, { file, type }]) => {
  return [path, { body: readFileSync(new URL(file, PAGE_DIR)), type }] as const
}))

/** Nothing is loaded from elsewhere, nothing inline runs, and no other site may frame the page. */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
}

export interface HttpGuards {
  hosts: Set<string>
  origins: Set<string>
  token: string
  refused: Map<string, number>
}

/** The request handler: Host and Origin checked first, then the static page or the token-guarded API. */
export function createHandler(
  host: ViewHost & { maxEntryChars: number }, live: LiveHub, guards: HttpGuards, log: (error: unknown) => void,
) {
  return (req: IncomingMessage, res: ServerResponse) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value)
    handle(req, res).catch((error) => {
      const refusal = error instanceof ConsoleError && error.code in STATUS ? error : new ConsoleError('INVALID_REQUEST', 'The request could not be handled.')
      guards.refused.set(refusal.code, (guards.refused.get(refusal.code) ?? 0) + 1)
      if (res.headersSent) return void res.destroy()
      res.writeHead(STATUS[refusal.code as keyof typeof STATUS], { 'content-type': 'application/json; charset=utf-8' })
      res.end(JSON.stringify({ error: { code: refusal.code, message: refusal.message } }))
    })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const hostHeader = (req.headers.host ?? '').toLowerCase()
    if (!guards.hosts.has(hostHeader)) throw new ConsoleError('FORBIDDEN_HOST', 'Refused: this Host is not one the console serves (allowedHosts); open the URL the console printed.')
    const origin = req.headers.origin
    if (origin !== undefined && !guards.origins.has(origin.toLowerCase())) throw new ConsoleError('FORBIDDEN_ORIGIN', 'Refused: requests from another site are not allowed.')
    const url = new URL(req.url ?? '/', 'http://console.invalid')
    const asset = assets.get(url.pathname)
    if (asset) {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new ConsoleError('METHOD_NOT_ALLOWED', 'The page is read with GET.')
      res.writeHead(200, { 'content-type': asset.type, 'content-length': asset.body.length })
      return void res.end(req.method === 'HEAD' ? undefined : asset.body)
    }
    if (!url.pathname.startsWith('/api/')) throw new ConsoleError('NOT_FOUND', `Nothing at ${headChars(url.pathname, 100)}.`)
    authenticate(req)
    if (url.pathname === '/api/snapshot') return json(res, snapshot(host), req.method)
    if (url.pathname === '/api/events') {
      expectMethod(req, 'GET')
      if (live.full) throw new ConsoleError('TOO_MANY_VIEWERS', 'Refused: too many live pages are open (maxViewers); close one.')
      return live.add(res)
    }
    const match = /^\/api\/runs\/([A-Za-z0-9_.:-]{1,200})\/(transcript|cancel|send|answer)$/.exec(url.pathname)
    if (!match) throw new ConsoleError('NOT_FOUND', `Nothing at ${headChars(url.pathname, 100)}.`)
    const [, runId, verb] = match
    if (verb === 'transcript') return json(res, transcript(runId, url), req.method)
    expectMethod(req, 'POST')
    if (verb === 'cancel') {
      await readBody(req)
      cancelRun(host, runId)
    } else if (verb === 'answer') {
      answerRun(host, runId, (await readBody(req) as { answer?: unknown } | undefined)?.answer, log)
    } else {
      sendToRun(host, runId, (await readBody(req) as { message?: unknown } | undefined)?.message)
    }
    json(res, { ok: true }, 'GET')
  }

  function authenticate(req: IncomingMessage): void {
    const header = req.headers.authorization
    const presented = bearerToken(header, MAX_TOKEN_LENGTH)
    if (presented === undefined || !sameSecret(presented, guards.token)) {
      throw new ConsoleError('UNAUTHENTICATED', 'Refused: send the console token as "Authorization: Bearer <token>" (the page takes it from the #token=… part of the URL the console printed).')
    }
  }

  function transcript(runId: string, url: URL) {
    const offset = integer(url.searchParams.get('offset'), 0, Number.MAX_SAFE_INTEGER, 0)
    const limit = integer(url.searchParams.get('limit'), 1, MAX_PAGE, 50)
    return transcriptOf(host, runId, offset, limit)
  }
}

function json(res: ServerResponse, body: unknown, method: string | undefined): void {
  if (method !== 'GET') throw new ConsoleError('METHOD_NOT_ALLOWED', 'Read it with GET.')
  const text = pageJson(body)
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

function expectMethod(req: IncomingMessage, method: string): void {
  if (req.method !== method) throw new ConsoleError('METHOD_NOT_ALLOWED', `Use ${method} here.`)
}

function integer(text: string | null, min: number, max: number, fallback: number): number {
  if (text === null) return fallback
  const value = Number(text)
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new ConsoleError('INVALID_REQUEST', `Expected an integer from ${min} to ${max}, got ${headChars(text, 20)}.`)
  return value
}

/** Reads a JSON body of at most `MAX_BODY_BYTES` (empty: undefined). */
async function readBody(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > MAX_BODY_BYTES) throw new ConsoleError('BODY_TOO_LARGE', `Refused: the body is larger than ${MAX_BODY_BYTES} bytes.`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY_BYTES) throw new ConsoleError('BODY_TOO_LARGE', `Refused: the body is larger than ${MAX_BODY_BYTES} bytes.`)
    chunks.push(chunk as Buffer)
  }
  if (!size) return undefined
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new ConsoleError('INVALID_REQUEST', 'The body is not JSON.')
  }
}
