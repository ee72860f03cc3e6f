/// <reference types="mocha" />
// loaderApp boots the real @cordisjs/loader on a cordis.yml, its context's baseDir set (where plugins resolve relative files).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually, loaderApp } from '@cordis-subagents/test-support'
// A plain ctx.stop() of a loader app trips the loader's own service listener; an app stops as config-watch stops it.
import { stopLoaderApp } from '@cordis-subagents/config-watch'

describe('test-support: loaderApp', () => {
  let dir: string
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'test-support-loader-')) })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('loads the entries of a cordis.yml (with their config) under the given baseDir, and stops them', async () => {
    writeFileSync(join(dir, 'marker.mjs'), `export const name = 'marker'
export function apply(ctx, config) {
  globalThis.__testSupportMarker = config.word + ' from ' + ctx.baseDir
  ctx.on('dispose', () => { globalThis.__testSupportMarker = 'disposed' })
}
`)
    writeFileSync(join(dir, 'cordis.yml'), `- id: marker
  name: ${JSON.stringify(join(dir, 'marker.mjs'))}
  config:
    word: hello
`)
    const app = loaderApp(join(dir, 'cordis.yml'), dir)
    const seen = globalThis as { __testSupportMarker?: string }
    try {
      await app.start()
      expect(await eventually(() => seen.__testSupportMarker, 'the marker plugin applied', 10_000)).to.equal(`hello from ${dir}`)
    } finally {
      await stopLoaderApp(app)
    }
    expect(seen.__testSupportMarker).to.equal('disposed')
    delete seen.__testSupportMarker
  })
})
