// The far edge of test/koishi-install.slow.spec.ts: an upstream npm registry on 127.0.0.1 that serves the third-party
// packages this checkout already has installed (every version under node_modules, nested ones too), so the loopback
// registry (verdaccio, loopback-registry.ts) can proxy what npm asks for while installing the market package without
// any network. A packument lists the versions found on disk; a tarball is packed on request from that directory
// (`package/` prefix, nested node_modules left out). A package that is not installed here answers 404, as a real
// registry answers for an unknown name (npm skips an optional dependency it cannot fetch).
import { lstatSync, readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join, relative } from 'node:path'
import { gzipSync } from 'node:zlib'

interface Installed { dir: string, manifest: Record<string, unknown> }

const KEEP = ['name', 'version', 'description', 'main', 'bin', 'dependencies', 'optionalDependencies', 'peerDependencies',
  'peerDependenciesMeta', 'engines', 'os', 'cpu', 'license']

/** Every installed package under `root` (a node_modules directory), by name and version; symbolic links are skipped. */
function scan(root: string, into = new Map<string, Map<string, Installed>>()): Map<string, Map<string, Installed>> {
  const visit = (dir: string) => {
    let manifest: Record<string, unknown>
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>
    } catch {
      return
    }
    const { name, version } = manifest as { name?: string, version?: string }
    if (typeof name === 'string' && typeof version === 'string') {
      const versions = into.get(name) ?? new Map<string, Installed>()
      if (!versions.has(version)) versions.set(version, { dir, manifest })
      into.set(name, versions)
    }
    scan(join(dir, 'node_modules'), into)
  }
  let entries: string[]
  try {
    entries = readdirSync(root)
  } catch {
    return into
  }
  for (const entry of entries) {
    if (entry.startsWith('.')) continue
    const path = join(root, entry)
    if (lstatSync(path).isSymbolicLink()) continue
    if (entry.startsWith('@')) {
      for (const inner of readdirSync(path)) if (!lstatSync(join(path, inner)).isSymbolicLink()) visit(join(path, inner))
    } else {
      visit(path)
    }
  }
  return into
}

/** One ustar header block for a regular file (a long path goes into the prefix field). */
function header(path: string, size: number, mode: number): Buffer {
  const block = Buffer.alloc(512)
  let name = path
  let prefix = ''
  if (Buffer.byteLength(name) > 100) {
    const at = [...path].map((char, index) => (char === '/' ? index : -1))
      .filter((index) => index >= 0 && index <= 155 && Buffer.byteLength(path.slice(index + 1)) <= 100)[0]
    if (at === undefined) throw new Error(`path too long for the mirror's tar: ${path}`)
    prefix = path.slice(0, at)
    name = path.slice(at + 1)
  }
  block.write(name, 0, 100, 'utf8')
  block.write(`${(mode & 0o777).toString(8).padStart(7, '0')}\0`, 100)
  block.write('0000000\0', 108)
  block.write('0000000\0', 116)
  block.write(`${size.toString(8).padStart(11, '0')}\0`, 124)
  block.write(`${Math.floor(Date.UTC(1985, 9, 26) / 1000).toString(8).padStart(11, '0')}\0`, 136)
  block.write('        ', 148)
  block.write('0', 156)
  block.write('ustar\0', 257)
  block.write('00', 263)
  block.write(prefix, 345, 155, 'utf8')
  let sum = 0
  for (const byte of block) sum += byte
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
  return block
}

/** The package directory as npm's tarball: regular files under `package/`, nested node_modules left out. */
function pack(dir: string): Buffer {
  const parts: Buffer[] = []
  const walk = (at: string) => {
    for (const entry of readdirSync(at).sort()) {
      const path = join(at, entry)
      const stat = lstatSync(path)
      if (stat.isDirectory()) {
        if (at === dir && entry === 'node_modules') continue
        walk(path)
      } else if (stat.isFile()) {
        const body = readFileSync(path)
        parts.push(header(`package/${relative(dir, path)}`, body.length, stat.mode), body, Buffer.alloc((512 - (body.length % 512)) % 512))
      }
    }
  }
  walk(dir)
  parts.push(Buffer.alloc(1024))
  return gzipSync(Buffer.concat(parts))
}

export interface NpmMirror { url: string, server: Server, close(): Promise<void> }

/** Starts the mirror of `nodeModules` on 127.0.0.1 (a free port). */
export async function startNpmMirror(nodeModules: string): Promise<NpmMirror> {
  const packages = scan(nodeModules)
  let url = ''
  const server = createServer((request, response) => {
    const path = decodeURIComponent((request.url ?? '/').split('?')[0]).slice(1)
    const tarball = /^(.+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(path)
    const name = tarball ? tarball[1] : path
    const versions = packages.get(name)
    const found = tarball ? versions?.get(tarball[2]) : undefined
    if (!versions || (tarball && !found)) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
      return
    }
    if (found) {
      response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(pack(found.dir))
      return
    }
    const time: Record<string, string> = { created: '2020-01-01T00:00:00.000Z', modified: '2020-01-01T00:00:00.000Z' }
    const listed: Record<string, unknown> = {}
    for (const [version, { manifest }] of versions) {
      const kept = Object.fromEntries(KEEP.filter((key) => key in manifest).map((key) => [key, manifest[key]]))
      listed[version] = { ...kept, dist: { tarball: `${url}/${name}/-/${name.split('/').pop()}-${version}.tgz` } }
      time[version] = '2020-01-01T00:00:00.000Z'
    }
    const latest = [...versions.keys()].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).pop()!
    response.writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ name, 'dist-tags': { latest }, versions: listed, time }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  return { url, server, close }
}
