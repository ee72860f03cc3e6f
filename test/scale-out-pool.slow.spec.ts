// The scale-out behaviour (test/support/scale-out-cases.ts) without a load balancer: the parent's
// provider-a2a spreads its tasks over the 3 hosts itself (`urls`), on the shared PostgreSQL store.
// The same hosts as deploy/scale-out (test/support/scale-out-pool.ts); behind nginx: test/scale-out.deploy.spec.ts.
import { scaleOutCases } from './support/scale-out-cases.js'
import { startScaleOutPool } from './support/scale-out-pool.js'

scaleOutCases({
  title: 'scale-out: 3 hosts in provider-a2a\'s pool (urls) with shared state in PostgreSQL',
  via: 'the provider\'s pool',
  start: (env) => startScaleOutPool(env),
  remote: (deployment) => ({ urls: deployment.hosts.map((host) => host.url) }),
})
