import { PostgresRateLimitStore } from '../../lib/index.js';
import { ALGORITHM_CODES } from '../../lib/algorithms/index.js';
import { createTestSchema, type TestSchema } from '../support/postgres.js';
import { TEST_START_MS } from '../support/time.js';

// The stores refuse to charge a concurrency limit before they send it (consume-all.ts' checkChargeable); the
// SQL refuses too, so that a caller that skips the check gets an error, never a log charged as slots.

let db: TestSchema;

beforeAll(async () => {
  db = await createTestSchema();
  await new PostgresRateLimitStore({ pool: db.pool, schema: db.schema, pruneIntervalMs: 0 }).migrate();
});
afterAll(() => db.drop());

it("rate_limit's charge refuses a concurrency limit and leaves its slots as they were", async () => {
  const S = `"${db.schema}"`;
  const args = (cost: number) => [
    TEST_START_MS,
    1000,
    ['k'],
    [ALGORITHM_CODES.concurrency],
    [2],
    [300_000],
    [2],
    [cost],
  ];
  const consumed = await db.pool.query(
    `SELECT ${S}.rate_limit_consume($2, true, ($4::int[])[1], ARRAY[$1::bigint], '{1}', '{1}', $3, $4, $5, $6, $7, $8, NULL, NULL, false) AS r`,
    args(1),
  );
  expect(consumed.rows[0].r.split(',').map(Number)).toEqual([1, 1, 300_000, 0]);
  const state = () => db.pool.query(`SELECT state FROM ${S}.rate_limit_state WHERE key = 'k'`);
  const before = (await state()).rows;
  await expect(
    db.pool.query(`SELECT ${S}.rate_limit('charge', $1, $2, $3, $4, $5, $6, $7, $8) AS r`, args(1)),
  ).rejects.toThrow(/a concurrency limit cannot be charged/);
  expect((await state()).rows).toEqual(before);
});
