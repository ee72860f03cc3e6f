// The browser of the browser specs: CHROMIUM_PATH when set (any Chromium, e.g. Debian's /usr/bin/chromium),
// else the headless Chromium that arrives inside the npm package @sparticuz/chromium (brotli-compressed),
// unpacked once per version into <os.tmpdir()>/cordis-subagents-chromium-<version>/ with the package's
// lib pack (NSS, NSPR, expat: what a bare Node image lacks), and launched with it and fonts from npm.
import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { brotliDecompressSync, createBrotliDecompress } from 'node:zlib'

export interface Browser {
  executablePath: string
  /** Flags for a headless run as root on a machine without network (the project's known-good set). */
  args: string[]
  /** Environment for the browser process (the lib pack and fonts of the npm Chromium). */
  env?: Record<string, string>
}

const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync']

/** Writes the regular files of a (ustar) tar archive under `into`; the packs hold nothing else that we need. */
function untar(archive: Buffer, into: string): void {
  for (let at = 0; at + 512 <= archive.length;) {
    const header = archive.subarray(at, at + 512)
    if (header.every((byte) => byte === 0)) break
    const text = (from: number, to: number) => header.subarray(from, to).toString('utf8').replace(/\0.*$/s, '')
    const name = [text(345, 500), text(0, 100)].filter(Boolean).join('/')
    const size = parseInt(text(124, 136).trim() || '0', 8)
    const type = text(156, 157) || '0'
    const target = join(into, name)
    if (!target.startsWith(into) || name.split('/').includes('..')) throw new Error(`unsafe path in a browser pack: ${name}`)
    if (type === '0') {
      mkdirSync(dirname(target), { recursive: true })
      writeFileSync(target, archive.subarray(at + 512, at + 512 + size), { mode: parseInt(text(100, 108).trim() || '644', 8) & 0o755 })
    }
    at += 512 + Math.ceil(size / 512) * 512
  }
}

async function unpack(bin: string, into: string): Promise<void> {
  await pipeline(createReadStream(join(bin, 'chromium.br')), createBrotliDecompress(), createWriteStream(join(into, 'chromium'), { mode: 0o755 }))
  untar(brotliDecompressSync(readFileSync(join(bin, 'al2023.tar.br'))), into)
}

/**
 * A fontconfig setup for this checkout's fonts, beside the unpacked browser. The package's own fonts (Open Sans)
 * lack glyphs the pages show, and this browser aborts on a missing glyph (its font manager has no per-character
 * fallback), so fontconfig gets DejaVu from npm (dejavu-fonts-ttf), the fallback for every family.
 */
function fontConfig(dir: string): string {
  const fonts = join(dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf')
  const config = join(dir, `fonts-${createHash('sha256').update(fonts).digest('hex').slice(0, 12)}`)
  if (existsSync(join(config, 'fonts.conf'))) return config
  mkdirSync(config, { recursive: true })
  const file = join(config, `fonts.conf.${process.pid}`)
  writeFileSync(file, '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
    + `<fontconfig><dir>${fonts}</dir><cachedir>${join(config, 'cache')}</cachedir>`
    + '<match target="pattern"><edit name="family" mode="append_last"><string>DejaVu Sans</string></edit></match></fontconfig>\n')
  renameSync(file, join(config, 'fonts.conf'))
  return config
}

/** The package's directory: the package.json named @sparticuz/chromium above its entry point (its exports hide package.json). */
function packageRoot(entry: string): string {
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@sparticuz/chromium') return dir
  }
  throw new Error(`no package.json of @sparticuz/chromium above ${entry}`)
}

/** The npm package's Chromium, unpacked (once per version; concurrent runs each build aside, the first rename wins). */
async function npmChromium(): Promise<Browser> {
  const root = packageRoot(fileURLToPath(import.meta.resolve('@sparticuz/chromium')))
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
  const dir = join(tmpdir(), `cordis-subagents-chromium-${version}`)
  if (!existsSync(join(dir, 'chromium'))) {
    const building = `${dir}.${process.pid}.tmp`
    rmSync(building, { recursive: true, force: true })
    mkdirSync(building, { recursive: true })
    try {
      await unpack(join(root, 'bin'), building)
      renameSync(building, dir)
    } catch (error) {
      rmSync(building, { recursive: true, force: true })
      if (!existsSync(join(dir, 'chromium'))) {
        throw new Error(`could not unpack @sparticuz/chromium ${version} into ${dir}: ${(error as Error).message} (or set CHROMIUM_PATH)`, { cause: error })
      }
    }
  }
  const libs = [join(dir, 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':')
  return {
    executablePath: join(dir, 'chromium'),
    args: ARGS,
    env: { LD_LIBRARY_PATH: libs, FONTCONFIG_PATH: fontConfig(dir) },
  }
}

export async function testBrowser(): Promise<Browser> {
  const given = process.env.CHROMIUM_PATH
  if (given) {
    if (!existsSync(given)) throw new Error(`CHROMIUM_PATH is ${given}, which does not exist: unset it to use the Chromium from npm`)
    return { executablePath: given, args: ARGS }
  }
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the Chromium from npm (@sparticuz/chromium) runs on linux-x64 only, this is ${process.platform}-${process.arch}: `
      + 'set CHROMIUM_PATH to a Chromium or Chrome executable')
  }
  return npmChromium()
}
