// A real @cordisjs/loader app on a cordis.yml: the boot that composition tests repeat.
import Loader from '@cordisjs/loader'
import { Context } from 'cordis'

/** A context that runs the loader on `file` (relative entries resolve from `baseDir`), not yet started. */
export function loaderApp(file: string, baseDir?: string): Context {
  const ctx = new Context()
  if (baseDir !== undefined) ctx.baseDir = baseDir
  ctx.plugin(Loader, { filename: file } as never)
  return ctx
}
