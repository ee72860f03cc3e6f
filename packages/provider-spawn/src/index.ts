export { createInProcessProvider } from './in-process-provider.js'
export { MAX_IN_PROCESS_FOLLOW_UPS } from './follow-ups.js'
export { inProcessConfig, type InProcessConfig, type InProcessProviderOptions, SUBAGENT_NOTE } from './config.js'
export { name, reusable, inject, Config, apply } from './plugin.js'
