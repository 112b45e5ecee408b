import { readFileSync } from 'node:fs';

import { ALGORITHM_CODES } from '../../lib/algorithms/index.js';
import type { Clock } from '../../lib/util/clock.js';
import {
  PostgresRateLimitStore,
  type RateLimitDecision,
  type RateLimitStore,
  type ResolvedPolicy,
} from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { nth } from './harness.js';
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

/**
 * The storage key of `policy` and identity 'u' as this version's store (storeOn) names it, which the specs'
 * applications of earlier schemas write too: their schema's migration is under test, not their keys (which held
 * identities as they were; nothing was released with them).
 */
export const storageKeyOf = (policy: { readonly id: string; readonly shape: string }): string =>
  storageKey('rl:', policy, 'u');

/** This version's store on the test's schema, deciding on `clock`, without pruning. */
export const storeOn = (db: SchemaRef, clock: Clock): PostgresRateLimitStore =>
  new PostgresRateLimitStore({ pool: db.pool, schema: db.schema, clock, pruneIntervalMs: 0 });

/** The consume entry points of earlier schemas (rate_limit_consume: without the arrays of shadows and blocks). */
type EarlierConsume = 'rate_limit_consume' | 'rate_limit_consume_v2' | 'rate_limit_consume_v3';

/**
 * A consume of one unit of `policy` on storage key `key` at `nowMs`, through an earlier schema's entry point, as
 * an application of that version sends it; the reply as the function returns it ("allowed,remaining,...").
 */
export async function consumeThrough(
  db: SchemaRef,
  entryPoint: EarlierConsume,
  policy: ResolvedPolicy,
  key: string,
  nowMs: number,
): Promise<string> {
  const code = ALGORITHM_CODES[policy.algorithm];
  const shadowsAndBlocks = entryPoint === 'rate_limit_consume' ? '' : ', NULL, NULL';
  const { rows } = await db.pool.query<{ r: string }>(
    `SELECT ${db.schema}.${entryPoint}(1000, true, $1, $2, '{1}', '{1}', $3, $4, $5, $6, $7, '{1}'${shadowsAndBlocks}) AS r`,
    [code, [nowMs], [key], [code], [policy.limit], [policy.windowMs], [policy.capacity]],
  );
  return nth(rows, 0).r;
}

/** The state string of a rate limit's storage key, undefined when it has no row. */
export async function stateOf(db: SchemaRef, key: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ state: string }>(
    `SELECT state FROM ${db.schema}.rate_limit_state WHERE key = $1`,
    [key],
  );
  return rows[0]?.state;
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

/**
 * The schema's functions that ought to be gone after this version's migration: a name defined more than once (an
 * overload left behind) or one `obsolete` matches.
 */
export async function strayFunctions(db: SchemaRef, obsolete: RegExp): Promise<{ proname: string; n: number }[]> {
  return (await schemaFunctions(db)).filter((f) => f.n !== 1 || obsolete.test(f.proname));
}

/**
 * One consume of `policy` on key 'u' in `reference`, then one through an earlier version's entry point
 * (`consumeAsBefore`): its reply ("allowed,remaining,resetMs,retryAfterMs") says what the reference decided.
 */
export async function expectEntryPointAgrees(
  consumeAsBefore: () => Promise<string>,
  reference: RateLimitStore,
  policy: ResolvedPolicy,
): Promise<void> {
  const expected = nth(await reference.consume([{ policy, key: 'u', cost: 1 }]), 0);
  const [allowed, remaining, resetMs, retryAfterMs] = (await consumeAsBefore()).split(',').map(Number);
  expect({ allowed: allowed === 1, remaining, resetMs, retryAfterMs }).toEqual({
    allowed: expected.allowed,
    remaining: expected.remaining,
    resetMs: expected.resetMs,
    retryAfterMs: expected.retryAfterMs,
  });
}
