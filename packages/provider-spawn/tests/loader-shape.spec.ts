import { describeLoaderShape } from './loader-shape.js'

describeLoaderShape('@cordis-subagents/provider-spawn', () => import('@cordis-subagents/provider-spawn'),
  { name: 'provider-spawn', provider: 'spawn', inheritsParentContext: false })
