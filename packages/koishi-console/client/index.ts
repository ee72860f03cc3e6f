// The console page's client entry, built by Koishi's client tooling (scripts/build-client.mjs) into dist/.
import { Context } from '@koishijs/client'
import Page from './page.vue'

export default (ctx: Context) => {
  ctx.page({
    name: 'Delegations',
    path: '/subagents',
    // Shown once the console sent this user the trees: without the view authority it gets none, and no page.
    fields: ['subagentNodes', 'subagentTrees'],
    component: Page,
  })
}
