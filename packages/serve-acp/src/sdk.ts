export type Sdk = typeof import('@agentclientprotocol/sdk')

let sdkPromise: Promise<Sdk> | undefined

/** The ACP SDK, imported on first use (its cold import costs ~0.3 s). */
export function loadSdk(): Promise<Sdk> {
  return sdkPromise ??= import('@agentclientprotocol/sdk').catch((error) => {
    sdkPromise = undefined
    throw error
  })
}

/** The ACP protocol version this server speaks. */
export const PROTOCOL_VERSION = 1
