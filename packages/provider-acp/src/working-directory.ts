import { stat } from 'node:fs/promises'
import { AcpError } from './errors.js'

/** The agent's working directory must exist before a process is spawned there. */
export async function checkDirectory(cwd: string) {
  try {
    const info = await stat(cwd)
    if (info.isDirectory()) return
  } catch {
    // reported below
  }
  throw new AcpError('ACP_SPAWN_FAILED',
    `The working directory for the ACP agent, ${cwd}, does not exist or is not a directory. Set the provider's cwd, or run the parent agent in an existing directory.`)
}
