import { type Context, Service } from 'cordis'
import type {} from '@koishijs/plugin-console'

export interface DataSpec<T> {
  key: string
  /** Authority a console user needs to get it (checked by the console, with plugin-auth loaded). */
  authority: number
  read: () => T
}

/**
 * One of the console's data services (`console.services.<key>`), as `@koishijs/plugin-console`'s
 * `DataService` is: the console sends `get()` to each client it lets through (`options.authority`)
 * when it connects or logs in; `refresh()` sends it again to every client, `patch(value)` merges
 * `value` into what each client holds. Written here rather than extending `DataService` because
 * that class can only be imported through `koishi`'s ESM entry, which fails under Node's ESM
 * loader in Koishi 4.18 (README: Why no import of koishi); the console reads its services by name.
 */
export class ConsoleData<T> extends Service {
  /** One plugin class for each of the page's data services. */
  static reusable = true

  private readonly key: string
  readonly options: { authority: number }
  private readonly read: () => T

  /** A plugin (`ctx.plugin(ConsoleData, spec)`), as a `DataService` is: the runtime exposes it by its name. */
  constructor(ctx: Context, spec: DataSpec<T>) {
    super(ctx, `console.services.${spec.key}`, true)
    this.key = spec.key
    this.options = { authority: spec.authority }
    this.read = spec.read
  }

  async get(): Promise<T> {
    return this.read()
  }

  refresh(): void {
    void this.ctx.get('console')?.broadcast('data', async () => ({ key: this.key, value: this.read() }), this.options)
  }

  patch(value: Partial<T>): void {
    void this.ctx.get('console')?.broadcast('patch', { key: this.key, value }, this.options)
  }
}
