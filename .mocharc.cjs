// Specs are TypeScript run through tsx; the `cordis-subagents-source` export condition resolves our packages to src/.
// The spec lists live in the `test`, `test:unit` and `test:integration` scripts, so `npx mocha <file>` runs just that file.
// --no-experimental-require-module keeps every spec ESM so only one cordis Context class exists.
module.exports = {
  'node-option': ['import=tsx', 'conditions=cordis-subagents-source', 'no-experimental-require-module'],
  extension: ['ts'],
  // test-postgres.ts starts the run's PostgreSQL (unless CHECKPOINTS_PG_URL is set) before any spec loads.
  require: ['test/setup/test-postgres.ts', 'test/setup/root-hooks.ts'],
  timeout: 20000,
  // Leaks are caught by the root leak audit (test/setup/root-hooks.ts); --exit only keeps a
  // runner-side straggler (tsx's compiler service) from holding CI open after a clean audit.
  exit: true,
  reporter: 'spec',
}
