import { readFileSync } from 'node:fs';

import type { RateLimitDecision, RateLimitStore, ResolvedPolicy } from '../../lib/index.js';
import { createTestSchema, type TestSchema } from './postgres.js';

/** The part of a test schema the migration specs use. */
type SchemaRef = Pick<TestSchema, 'pool' | 'schema'>;

/**
 * A test schema of the spec's own, with an earlier version's schema (`dump`: a file of test/support written by
 * that version's postgresSchemaSql('__SCHEMA__')) migrated into it before the spec's tests, dropped after them.
 * `migrate()` runs that earlier migration again (an instance of that version starting meanwhile).
 */
export function earlierSchema(dump: string): SchemaRef & { migrate(): Promise<unknown> } {
  const sql = readFileSync(new URL(dump, import.meta.url), 'utf8');
  let db: TestSchema | undefined;
  const current = (): TestSchema => {
    if (db === undefined) throw new Error('earlierSchema: the schema is made in beforeAll');
    return db;
  };
  const migrate = () => current().pool.query(sql.replaceAll('"__SCHEMA__"', `"${current().schema}"`));
  beforeAll(async () => {
    db = await createTestSchema();
    await migrate();
  });
  afterAll(() => db?.drop());
  return {
    get pool() {
      return current().pool;
    },
    get schema() {
      return current().schema;
    },
    migrate,
  };
}

/** The functions of the test's schema: each name with how many functions have it. */
export async function schemaFunctions(db: SchemaRef): Promise<{ proname: string; n: number }[]> {
  const { rows } = await db.pool.query<{ proname: string; n: number }>(
    `SELECT proname, count(*)::int AS n FROM pg_proc JOIN pg_namespace ON pg_namespace.oid = pronamespace
      WHERE nspname = $1 GROUP BY proname ORDER BY proname`,
    [db.schema],
  );
  return rows;
}

/** `count` consumes of `policy` on key 'u' in `store` and in `reference` (which saw the same ones before): equal. */
export async function decideAlike(
  store: RateLimitStore,
  reference: RateLimitStore,
  policy: ResolvedPolicy,
  count: number,
): Promise<void> {
  const actual: RateLimitDecision[][] = [];
  const expected: RateLimitDecision[][] = [];
  for (let i = 0; i < count; i++) {
    actual.push(await store.consume([{ policy, key: 'u', cost: 1 }]));
    expected.push(await reference.consume([{ policy, key: 'u', cost: 1 }]));
  }
  expect(actual).toEqual(expected);
}
