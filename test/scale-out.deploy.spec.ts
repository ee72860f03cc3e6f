// The scale-out deployment, run for real on loopback by deploy/scale-out/run.sh: PostgreSQL (the
// shared task store), 3 serving hosts of the quick start's agent, nginx in front; the behaviour is
// test/support/scale-out-cases.ts. nginx has no npm package, so this spec is the deployment tier
// (`npm run test:deploy`, which CI runs after installing nginx); `npm test` runs the same cases over
// provider-a2a's pool (test/scale-out-pool.slow.spec.ts). Fails, never skips, without nginx (run.sh says how to get it).
import { scaleOutCases } from './support/scale-out-cases.js'
import { startScaleOut } from './support/scale-out.js'

scaleOutCases({
  title: 'scale-out: 3 hosts behind nginx with shared state in PostgreSQL (deploy/scale-out/run.sh)',
  via: 'nginx',
  start: startScaleOut,
  remote: (deployment) => ({ url: deployment.url }),
})
