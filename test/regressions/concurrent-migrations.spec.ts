// Regression: "Migrations race each other". Processes starting at once with `postgres: { migrate: true }`
// crashed: on a fresh schema with `duplicate key value violates unique constraint "pg_namespace_nspname"`
// (concurrent CREATE SCHEMA IF NOT EXISTS), on a migrated one with `tuple concurrently updated` (concurrent
// CREATE OR REPLACE FUNCTION). migrate() now runs in one transaction under an advisory lock of the schema.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import pg from 'pg';

import { PostgresRateLimitStore, validatePolicy } from '../../lib/index.js';
import { createTestSchema, PG_CONFIG, type TestSchema } from '../support/postgres.js';

const PROCESSES = 6;

interface Exit {
  code: number | null;
  stderr: string;
}

/**
 * Starts PROCESSES children that each open a connection and report ready, then releases them together (the
 * start barrier) to run migrate() on `schema`; returns how each one exited.
 */
async function migrateFromProcesses(schema: string): Promise<Exit[]> {
  const script = fileURLToPath(new URL('../support/migrate-child.mjs', import.meta.url));
  const env = {
    ...process.env,
    PGHOST: PG_CONFIG.host,
    PGPORT: String(PG_CONFIG.port),
    PGUSER: PG_CONFIG.user,
    PGDATABASE: PG_CONFIG.database,
  };
  const runs = Array.from({ length: PROCESSES }, () => {
    const child = spawn(process.execPath, [script, schema], { stdio: ['pipe', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<Exit>((resolve) =>
      child.once('close', (code) => resolve({ code, stderr: stderr.trim() })),
    );
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.startsWith('ready\n')) resolve();
      });
      void exit.then(({ code, stderr: text }) => reject(new Error(`child exited with ${code} before ready: ${text}`)));
    });
    return { child, ready, exit };
  });
  await Promise.all(runs.map((run) => run.ready));
  for (const run of runs) run.child.stdin.end('go\n');
  return Promise.all(runs.map((run) => run.exit));
}

const ALL_SUCCEEDED: Exit[] = Array.from({ length: PROCESSES }, () => ({ code: 0, stderr: '' }));

let db: TestSchema;
const stores: PostgresRateLimitStore[] = [];

beforeAll(async () => {
  db = await createTestSchema();
  // A name of this run's own that does not exist yet: the processes race to create the schema itself.
  await db.pool.query(`DROP SCHEMA ${db.schema}`);
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await db.drop();
});

describe('concurrent migrations', () => {
  it(`succeed from ${PROCESSES} processes at once on a fresh schema`, async () => {
    expect(await migrateFromProcesses(db.schema)).toEqual(ALL_SUCCEEDED);
  });

  it(`succeed from ${PROCESSES} processes at once on a migrated schema`, async () => {
    await new PostgresRateLimitStore({ pool: db.pool, schema: db.schema, pruneIntervalMs: 0 }).migrate();
    expect(await migrateFromProcesses(db.schema)).toEqual(ALL_SUCCEEDED);
  });

  it('leave one schema with its tables and functions, which decides', async () => {
    const { rows: namespaces } = await db.pool.query<{ nspname: string }>(
      'SELECT nspname FROM pg_namespace WHERE nspname = $1',
      [db.schema],
    );
    expect(namespaces).toEqual([{ nspname: db.schema }]);
    const { rows: tables } = await db.pool.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [db.schema],
    );
    expect(tables.map((row) => row.table_name)).toEqual([
      'rate_limit_override',
      'rate_limit_policy',
      'rate_limit_quota_usage',
      'rate_limit_state',
    ]);
    const { rows: functions } = await db.pool.query<{ proname: string; n: number }>(
      `SELECT proname, count(*)::int AS n FROM pg_proc JOIN pg_namespace ON pg_namespace.oid = pronamespace
        WHERE nspname = $1 GROUP BY proname`,
      [db.schema],
    );
    expect(functions).toContainEqual({ proname: 'rate_limit', n: 1 });
    expect(functions.filter((row) => row.n !== 1)).toEqual([]); // no function created twice (overloads)

    const store = new PostgresRateLimitStore({ pool: db.pool, schema: db.schema, pruneIntervalMs: 0 });
    stores.push(store);
    const policy = validatePolicy({
      name: 'after-migrations',
      algorithm: 'sliding-window-counter',
      limit: 5,
      window: '1m',
    });
    const [decision] = await store.consume([{ policy, key: 'k', cost: 1 }]);
    expect(decision).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('roll back and give their connection back when the schema SQL fails', async () => {
    // A function of the schema's name with another return type: CREATE OR REPLACE FUNCTION fails on it,
    // after the tables were created in the same transaction.
    const schema = `${db.schema}_broken`;
    await db.pool.query(`CREATE SCHEMA ${schema}`);
    const pool = new pg.Pool({ ...PG_CONFIG, max: 1 });
    try {
      await db.pool.query(
        `CREATE FUNCTION ${schema}.rl_ceil_div(a bigint, b bigint) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$`,
      );
      const store = new PostgresRateLimitStore({ pool, schema, pruneIntervalMs: 0 });
      stores.push(store);
      await expect(store.migrate()).rejects.toThrow(/cannot change return type of existing function/);
      // The pool's one connection is back, idle and out of the failed transaction.
      expect(await pool.query<{ ok: number }>('SELECT 1 AS ok')).toMatchObject({ rows: [{ ok: 1 }] });
      const { rows } = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      expect(rows).toEqual([{ n: 0 }]); // the tables created before the failure were rolled back
    } finally {
      await pool.end();
      await db.pool.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
