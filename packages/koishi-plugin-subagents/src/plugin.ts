// The Koishi market plugin: loads each section's components as sub-plugins of its own scope. A section
// whose value its component refuses logs `SECTION_INVALID` and does not load; a component that fails while
// loading fails in its own scope (Koishi logs it); the other sections run either way. When the config
// changes (Koishi's loader, the console's form), only the sections whose value changed are reloaded.
import type { Context, ForkScope } from 'cordis'
import type { Config } from './config.js'
import { KoishiSubagentsError } from './errors.js'
import { type Load, type Part, PARTS } from './parts.js'

export const name = 'subagents'

function isEnabled(part: Part, value: Record<string, unknown>): boolean {
  if (part.enabled === undefined) return true
  return (value.enabled as boolean | undefined) ?? part.enabled
}

/** The component's schema must accept its part of the section; else the error names the section and the key. */
function check(load: Load): KoishiSubagentsError | undefined {
  try {
    load.plugin.Config(load.config)
  } catch (error) {
    return new KoishiSubagentsError('SECTION_INVALID', `koishi-plugin-subagents: section ${load.label} is refused (SECTION_INVALID): `
      + `${(error as Error).message}. Fix it in the config form; the other sections run.`, { cause: error })
  }
}

function loadPart(ctx: Context, part: Part, value: Record<string, unknown> | undefined): ForkScope[] {
  const given = value ?? {}
  if (!isEnabled(part, given)) return []
  const forks: ForkScope[] = []
  for (const load of part.loads(given)) {
    const refused = check(load)
    if (refused) {
      // The message alone: it names the section, the component and the key (the cause's stack adds nothing).
      ctx.logger('subagents').error('%s', refused.message)
      // The section's later loads (a provider's tool) need the refused one: stop here.
      break
    }
    forks.push(ctx.plugin(load.plugin as never, load.config))
  }
  return forks
}

export function apply(ctx: Context, config: Config) {
  for (const part of PARTS) {
    let forks = loadPart(ctx, part, config[part.key])
    ctx.accept([part.key], (next: Config) => {
      for (const fork of forks.reverse()) fork.dispose()
      forks = loadPart(ctx, part, next[part.key])
    })
  }
}
