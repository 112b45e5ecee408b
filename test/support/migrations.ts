import type { RateLimitDecision, RateLimitStore, ResolvedPolicy } from '../../lib/index.js';
import type { TestSchema } from './postgres.js';

/** The functions of the test's schema: each name with how many functions have it. */
export async function schemaFunctions(db: TestSchema): Promise<{ proname: string; n: number }[]> {
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
