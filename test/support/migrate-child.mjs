// A separate process that runs PostgresRateLimitStore.migrate() through the built package (dist/).
// argv: schema. Connects with the PG* environment variables, prints "ready" once its connection is open, waits
// for "go" on stdin (the start barrier: every process migrates at the same moment), then migrates and exits 0,
// or prints the error on stderr and exits 1.
import pg from 'pg';

import { PostgresRateLimitStore } from '../../dist/index.js';

const [schema] = process.argv.slice(2);
const pool = new pg.Pool({ max: 1 });
const store = new PostgresRateLimitStore({ pool, schema, pruneIntervalMs: 0 });
await pool.query('SELECT 1'); // leaves the open connection idle in the pool: the race is not spent connecting
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  let code = 0;
  try {
    await store.migrate();
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    code = 1;
  }
  await store.close();
  await pool.end();
  process.exit(code);
});
