// Who may answer or cancel: the run's starter, an admin (Koishi authority, from its user table), or anyone.
import type { Context, Session } from 'koishi'
import type { Config } from './config.js'

/** Whether the session's user is an admin here: authority at least `adminAuthority`. Without a database nobody is. */
export async function isAdmin(koishi: Context, session: Session, config: Config): Promise<boolean> {
  if (!(koishi as unknown as { database?: unknown }).database || !session.userId) return false
  try {
    const user = await session.observeUser(['authority'])
    return (user.authority ?? 0) >= config.adminAuthority
  } catch {
    return false
  }
}

/** Whether a user may answer a question of a run `starter` started, under `answerBy`. */
export function mayAnswer(config: Config, userId: string, starter: string, admin: boolean): boolean {
  return admin || config.answerBy === 'anyone' || (config.answerBy === 'starter' && userId !== '' && userId === starter)
}

/** What a refused answer is told. */
export function answerRefusal(config: Config, tag: string): string {
  const who = config.answerBy === 'admins' ? 'an admin' : 'the user who started its run (or an admin)'
  return `Only ${who} may answer [${tag}]; your reply was not passed on.`
}
