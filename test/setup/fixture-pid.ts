// The run's own PostgreSQL (test-postgres.ts) is a child of the runner, not a test's: the leak audit
// (root-hooks.ts) reads its pid here. A module of its own so the audit does not start the server.
export const FIXTURE_PID_ENV = 'CORDIS_TEST_POSTGRES_PID'
