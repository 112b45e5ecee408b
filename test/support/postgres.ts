import pg from 'pg';

/**
 * Connection settings of the run's PostgreSQL: PGHOST, PGPORT, PGUSER and PGDATABASE, which npm test's global
 * setup (test/provision/postgres.mjs) sets to the server it chose or started.
 */
export const PG_CONFIG = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  database: process.env.PGDATABASE ?? 'test',
};

/** A schema of this test run's own on the machine's PostgreSQL, dropped by drop(). */
export interface TestSchema {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly url: string;
  drop(): Promise<void>;
}

let schemas = 0;

export async function createTestSchema(): Promise<TestSchema> {
  const schema = `rl_test_${process.pid}_${++schemas}_${Math.random().toString(36).slice(2, 8)}`;
  const pool = new pg.Pool({ ...PG_CONFIG, max: 20 });
  try {
    await pool.query(`CREATE SCHEMA ${schema}`);
  } catch (error) {
    await pool.end();
    throw new Error(
      `PostgreSQL is not reachable at ${PG_CONFIG.host}:${PG_CONFIG.port} (user ${PG_CONFIG.user}, database ${PG_CONFIG.database}): ${(error as Error).message}`,
      { cause: error },
    );
  }
  return {
    pool,
    schema,
    url: `postgres://${PG_CONFIG.user}@${PG_CONFIG.host}:${PG_CONFIG.port}/${PG_CONFIG.database}`,
    async drop() {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    },
  };
}
