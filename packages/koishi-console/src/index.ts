// The Koishi console page's face: the plugin (plugin.ts) and the types of the data and requests it serves.
export { apply, Config, inject, name } from './plugin.js'
export type { ActionReply } from './listeners.js'
export type { NodeMap, TreeMap } from './view.js'
