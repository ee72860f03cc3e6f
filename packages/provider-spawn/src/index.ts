export { createInProcessProvider, SUBAGENT_NOTE, type InProcessProviderOptions } from './in-process-provider.js'
export { MAX_FOLLOW_UPS_PER_RUN } from './steering.js'
export { inProcessConfig, type InProcessConfig } from './config.js'
export { name, reusable, inject, Config, apply } from './plugin.js'
