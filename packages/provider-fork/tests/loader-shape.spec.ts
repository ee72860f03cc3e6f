import { describeLoaderShape } from '../../provider-spawn/tests/loader-shape.js'

describeLoaderShape('@cordis-subagents/provider-fork', () => import('@cordis-subagents/provider-fork'),
  { name: 'provider-fork', provider: 'fork', inheritsParentContext: true })
