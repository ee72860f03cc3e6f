// Specs are TypeScript run through tsx; the `cordis-subagents-source` export condition resolves our packages to src/.
// The spec lists live in the `test*` scripts, so `npx mocha <file>` runs just that file.
// --no-experimental-require-module keeps every spec ESM so only one cordis Context class exists.
//
// Tiers (CONTRIBUTING.md, "Test tiers"): TEST_TIER=fast (`npm run test:fast`) leaves out *.slow.spec.ts and
// *.deploy.spec.ts, starts no PostgreSQL, and loads a guard (test/setup/fast-tier.ts) that fails any spec
// starting a subprocess, opening a server or connecting anywhere. Otherwise test-postgres.ts starts the
// run's PostgreSQL (unless CHECKPOINTS_PG_URL is set) before any spec loads.
//
// `npm test` and `npm run test:fast` add --parallel --jobs 2: spec files run in two worker processes at once. A worker loads these
// `require` files too and runs the root hooks (so the leak audit) around each file; the PostgreSQL is still
// started once, in the main process, and each worker makes a database of its own on it
// (test/setup/worker-database.ts). Every other script runs the files one after another in one process.
const fast = process.env.TEST_TIER === 'fast'

module.exports = {
  'node-option': ['import=tsx', 'conditions=cordis-subagents-source', 'no-experimental-require-module'],
  extension: ['ts'],
  require: [fast ? 'test/setup/fast-tier.ts' : 'test/setup/test-postgres.ts', 'test/setup/root-hooks.ts'],
  ...(fast ? { ignore: ['**/*.slow.spec.ts', '**/*.deploy.spec.ts'] } : {}),
  timeout: 20000,
  // Leaks are caught by the root leak audit (test/setup/root-hooks.ts); --exit only keeps a
  // runner-side straggler (tsx's compiler service) from holding CI open after a clean audit.
  exit: true,
  reporter: 'spec',
}
