export { name, reusable, inject, Config, apply } from './plugin.js'
