import { storeBehaviour } from './behaviour.js'
import { freshPostgres } from './support.js'

describe('checkpoints on PostgreSQL (a real server, CHECKPOINTS_PG_URL)', function () {
  storeBehaviour(() => ({ kind: 'postgres' }), freshPostgres)
})
