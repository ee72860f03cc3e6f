/** What a provider can honour beyond a prompt. */
export interface Capabilities {
  /** `persona` (a system prompt of the caller's choosing). */
  persona: boolean
  /** `toolFilter` (narrowing the child's tools). */
  toolFilter: boolean
  /** `maxDepth` (a depth ceiling for the child's own descendants). */
  depthLimit: boolean
}

/** The options that need a capability, as a request or a tool config carries them. */
export interface CapabilityOptions {
  persona?: unknown
  toolFilter?: unknown
  maxDepth?: unknown
}

export interface MissingCapability {
  capability: keyof Capabilities
  /** The option that asked for it. */
  option: keyof CapabilityOptions
}

/** The first option set in `options` that `capabilities` cannot honour, or `undefined`. */
export function missingCapability(capabilities: Capabilities, options: CapabilityOptions): MissingCapability | undefined {
  if (options.persona !== undefined && !capabilities.persona) return { capability: 'persona', option: 'persona' }
  if (options.toolFilter !== undefined && !capabilities.toolFilter) return { capability: 'toolFilter', option: 'toolFilter' }
  if (options.maxDepth !== undefined && !capabilities.depthLimit) return { capability: 'depthLimit', option: 'maxDepth' }
  return undefined
}
