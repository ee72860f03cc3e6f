import { createRequire } from 'node:module'
import type { Context } from 'cordis'
import { unawaitedStops } from '@cordis-subagents/shared'
import { delay, type HostApp } from './host-app.js'

interface KoishiLoader {
  writable?: boolean
  fullReload(code?: number): void
  logUpdate(...args: unknown[]): void
  init(filename: string): Promise<void>
  readConfig(initial?: boolean): Promise<unknown>
  createApp(): Promise<KoishiContext>
}

interface KoishiContext {
  on(event: string, listener: (...args: any[]) => void): void
  start(): Promise<void>
  stop(): Promise<void>
  lifecycle?: { flush(): Promise<void> }
}

/**
 * A Koishi app from a koishi.yml, started in this process with the Koishi loader of the project
 * the file belongs to (`koishi` resolved from the file's folder), without `koishi start`'s worker
 * and daemon: the bin owns stdout, the signals and the shutdown. The loader never writes the file.
 */
export async function koishiApp(filename: string): Promise<HostApp> {
  const requireHere = createRequire(filename)
  let koishiMain: string
  try {
    koishiMain = requireHere.resolve('koishi')
  } catch {
    throw new Error(`koishi is not installed where ${filename} is (npm install koishi in that project)`)
  }
  // @koishijs/loader is koishi's dependency: resolve it from koishi's own location.
  const { default: Loader } = createRequire(koishiMain)('@koishijs/loader') as { default: new () => KoishiLoader }
  const loader = new Loader()
  let app: KoishiContext | undefined
  const pending: Array<[string, (...args: any[]) => void]> = []
  return {
    on: (event, listener) => { if (app) app.on(event, listener); else pending.push([event, listener]) },
    async start(_errorCount, timeout) {
      await loader.init(filename)
      loader.writable = false
      // Outside `koishi start` there is no daemon to restart the process.
      loader.fullReload = () => {}
      // Not `readConfig(true)`: that migrates the project (rewrites package.json and the file).
      await loader.readConfig()
      app = await loader.createApp()
      for (const [event, listener] of pending.splice(0)) app.on(event, listener)
      await app.start()
      // Koishi applies entries as it starts; wait (bounded) for the tasks they started.
      if (app.lifecycle) await Promise.race([app.lifecycle.flush(), delay(timeout)])
    },
    async stop() {
      // Its per-entry "unload" log needs the logger service, which goes first as the app stops.
      loader.logUpdate = () => {}
      const stores = app && unawaitedStops(app as unknown as Context)
      await app?.stop().catch(() => {})
      await stores?.()
    },
  }
}
