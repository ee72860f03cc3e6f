// The `./agents` entry: agent definitions written in a cordis.yml / koishi.yml entry.
export { apply, Config, inject, name, reusable } from './plugin.js'
