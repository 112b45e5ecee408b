import { jest } from '@jest/globals';
import pg from 'pg';

import { PostgresRateLimitStore, type PostgresRateLimitStoreOptions } from '../../lib/index.js';

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

/** A test schema with this version's tables, and stores on it: what a PostgreSQL store spec sets up. */
export interface MigratedSchema {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly url: string;
  /** A store on the schema, under a key prefix of its own unless `options` names one; closed after the tests. */
  store(options?: Partial<PostgresRateLimitStoreOptions>): PostgresRateLimitStore;
}

/**
 * A schema of the spec's own, made and migrated before its tests; after them its stores are closed and it is
 * dropped. Stores are made with `pruneIntervalMs: 0` and the key prefix `${prefix}<n>:` unless told otherwise.
 * @example const db = migratedSchema('b'); it('…', async () => { const s = db.store({ clock }); … });
 */
export function migratedSchema(prefix: string): MigratedSchema {
  let db: TestSchema | undefined;
  let prefixes = 0;
  const stores: PostgresRateLimitStore[] = [];
  const current = (): TestSchema => {
    if (db === undefined) throw new Error('migratedSchema: the schema is made in beforeAll');
    return db;
  };
  const store = (options: Partial<PostgresRateLimitStoreOptions> = {}): PostgresRateLimitStore => {
    const made = new PostgresRateLimitStore({
      pool: current().pool,
      schema: current().schema,
      keyPrefix: `${prefix}${++prefixes}:`,
      pruneIntervalMs: 0,
      ...options,
    });
    stores.push(made);
    return made;
  };
  beforeAll(async () => {
    db = await createTestSchema();
    await store().migrate();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await db?.drop();
  });
  return {
    get pool() {
      return current().pool;
    },
    get schema() {
      return current().schema;
    },
    get url() {
      return current().url;
    },
    store,
  };
}

/** The statements `pool` was sent while `run` ran, and what `run` gave. */
export async function statementsDuring<T>(
  pool: pg.Pool,
  run: () => Promise<T>,
): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const query = pool.query.bind(pool);
  // A spy that counts pg's queries and returns pg's own promise (jest types the implementation as void).
  // eslint-disable-next-line @typescript-eslint/no-misused-promises
  const spy = jest.spyOn(pool, 'query').mockImplementation(((...args: Parameters<typeof query>) => {
    statements.push(String(args[0]));
    return query(...args);
  }) as typeof query);
  try {
    return { result: await run(), statements };
  } finally {
    spy.mockRestore();
  }
}
