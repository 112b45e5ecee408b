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
import { periodOf } from '../../lib/algorithms/quota/quota.js';
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

/**
 * A consume of one unit of `policy` on storage key `key` at `nowMs` through rate_limit_consume as 0.1.0 declares it
 * (test/support/schema-0.1.0.sql), as an instance of 0.1.0 sends it; the reply as the function returns it
 * ("allowed,remaining,resetMs,retryAfterMs"). A quota's window and capacity are its period's edges.
 */
export async function consumeAs010(db: SchemaRef, policy: ResolvedPolicy, key: string, nowMs: number): Promise<string> {
  const code = ALGORITHM_CODES[policy.algorithm];
  const [window, capacity] =
    policy.quota === undefined ? [policy.windowMs, policy.capacity] : edgesOf(periodOf(policy, nowMs));
  const { rows } = await db.pool.query<{ r: string }>(
    `SELECT ${db.schema}.rate_limit_consume(1000, true, $1, $2, '{1}', '{1}', $3, $4, $5, $6, $7, '{1}', NULL, NULL,
      false) AS r`,
    [code, [nowMs], [key], [code], [policy.limit], [window], [capacity]],
  );
  return nth(rows, 0).r;
}

const edgesOf = ({ startMs, endMs }: { startMs: number; endMs: number }) => [startMs, endMs];

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

/** The definitions (pg_get_functiondef) of the test's schema's functions, by name. */
export async function functionDefinitions(db: SchemaRef): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ proname: string; definition: string }>(
    `SELECT proname, pg_get_functiondef(pg_proc.oid) AS definition FROM pg_proc
      JOIN pg_namespace ON pg_namespace.oid = pronamespace WHERE nspname = $1 ORDER BY proname`,
    [db.schema],
  );
  return Object.fromEntries(rows.map((row) => [row.proname, row.definition]));
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
