export { createInProcessProvider, SUBAGENT_NOTE, type InProcessProviderOptions } from './in-process-provider.js'
export { MAX_IN_PROCESS_FOLLOW_UPS } from './steering.js'
export { inProcessConfig, type InProcessConfig } from './config.js'
export { name, reusable, inject, Config, apply } from './plugin.js'
