import { validatePolicy, type RateLimitDecision } from '../../lib/index.js';
import { ALGORITHM_CODES } from '../../lib/algorithms/index.js';
import { periodOf } from '../../lib/algorithms/quota/quota.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { earlierSchema, schemaFunctions, storeOn, storageKeyOf } from '../support/migrations.js';
import { ReferenceStore } from '../support/reference-store.js';

const db = earlierSchema('./schema-0.1.0.sql');

const clock = new FakeClock(Date.parse('2026-05-10T10:00:00Z'));
const perMinute = validatePolicy({ name: 'per-minute', algorithm: 'fixed-window', limit: 5, window: '1m' });
const monthly = validatePolicy({ name: 'monthly', algorithm: 'quota', limit: 10, period: 'month' });
// capacities other than the limit: the token bucket's state of 0.1.0 counts the tokens left of it
const bucket = validatePolicy({ name: 'bucket', algorithm: 'token-bucket', limit: 6, burst: 4, window: '1m' });
const cell = validatePolicy({ name: 'cell', algorithm: 'gcra', limit: 6, burst: 4, window: '1m' });
const key = storageKeyOf;

/** A consume through rate_limit(), the entry point of the previous schema, as an application of 0.1.0 calls it. */
async function consumeAsBefore(policy: typeof perMinute, nowMs = clock.now()): Promise<string[]> {
  const window = policy.quota === undefined ? [policy.windowMs, policy.capacity] : periodEdges(policy, nowMs);
  const { rows } = await db.pool.query<{ r: string[] }>(
    `SELECT ${db.schema}.rate_limit('consume', $1, 1000, $2, $3, $4, $5, $6, '{1}') AS r`,
    [nowMs, [key(policy)], [ALGORITHM_CODES[policy.algorithm]], [policy.limit], [window[0]], [window[1]]],
  );
  return nth(rows, 0).r;
}
const periodEdges = (policy: typeof monthly, nowMs: number) => {
  const { startMs, endMs } = periodOf(policy, nowMs);
  return [startMs, endMs];
};

/** What 0.1.0 consumed of the bucket and the cell (3 units each, at 10:00:00), as the reference counts it. */
const later = new FakeClock(clock.now());
const reference = new ReferenceStore(later);

describe('migrating a schema of 0.1.0', () => {
  it('keeps the state and the quota usage it holds, replaces its functions and leaves none behind', async () => {
    for (let i = 0; i < 3; i++) await consumeAsBefore(perMinute);
    for (let i = 0; i < 4; i++) await consumeAsBefore(monthly);
    for (const policy of [bucket, cell]) {
      for (let i = 0; i < 3; i++) {
        expect((await consumeAsBefore(policy))[0]).toBe('1');
        await reference.consume([{ policy, key: 'u', cost: 1 }]);
      }
    }
    // the states of 0.1.0: tokens left (scaled) and their time; the TAT and its remainder
    const { rows } = await db.pool.query<{ state: string }>(
      `SELECT state FROM ${db.schema}.rate_limit_state WHERE key = ANY($1) ORDER BY key`,
      [[key(bucket), key(cell)]],
    );
    expect(rows.map((row) => row.state)).toEqual([`60000:${clock.now()}`, `${clock.now() + 30_000}:0`]);
    expect((await schemaFunctions(db)).map((f) => f.proname)).toContain('rl_fw_step');

    const store = storeOn(db, clock);
    await store.migrate();
    const after = await schemaFunctions(db);
    expect(after.filter((f) => f.n !== 1)).toEqual([]); // no overloads
    expect(after.map((f) => f.proname)).toEqual(expect.arrayContaining(['rate_limit', 'rate_limit_consume']));
    // the PL/pgSQL steps of 0.1.0 are gone
    expect(after.map((f) => f.proname).filter((name) => /_step$|^rl_refund$|^rl_tb_refill$/.test(name))).toEqual([]);

    const [rate] = await store.consume([{ policy: perMinute, key: 'u', cost: 1 }]);
    expect(rate).toMatchObject({ allowed: true, remaining: 1 }); // 3 counted by 0.1.0, then this one
    const [quota] = await store.consume([{ policy: monthly, key: 'u', cost: 1 }]);
    expect(quota).toMatchObject({ allowed: true, remaining: 5 });
    expect(await store.quotaUsage(monthly, 'u', periodOf(monthly, clock.now()).startMs)).toEqual({
      used: 5,
      limit: 10,
    });
    await store.close();
  });

  it("reads the token bucket's and GCRA's states of 0.1.0 as the units they had taken: it decides as 0.1.0 would have", async () => {
    later.advance(5_000); // half a token back
    const store = storeOn(db, later);
    for (const policy of [bucket, cell]) {
      const decisions: RateLimitDecision[][] = [];
      for (let i = 0; i < 3; i++) decisions.push(await store.consume([{ policy, key: 'u', cost: 1 }]));
      // the last unit of the burst, then denials until the next whole unit is back
      expect(decisions.map(([d]) => [d?.allowed, d?.remaining, d?.retryAfterMs])).toEqual([
        [true, 0, 0],
        [false, 0, 5_000],
        [false, 0, 5_000],
      ]);
      const expected: RateLimitDecision[][] = [];
      for (let i = 0; i < 3; i++) expected.push(await reference.consume([{ policy, key: 'u', cost: 1 }]));
      expect(decisions).toEqual(expected);
    }
    // written back as this version's states, which no twin of 0.1.0 can take for its own: the bucket's units
    // with the limit they drain at, GCRA's TAT in µs (the bucket's 210 000 units at 6 per ms: 35 000 000 µs)
    const { rows } = await db.pool.query<{ state: string }>(
      `SELECT state FROM ${db.schema}.rate_limit_state WHERE key = ANY($1) ORDER BY key`,
      [[key(bucket), key(cell)]],
    );
    expect(rows.map((row) => row.state)).toEqual([`210000@${later.now()}@6`, `${later.now() * 1000 + 35_000_000}`]);
    await store.close();
  });

  it('leaves the entry point of 0.1.0 working, so that its instances go on deciding during a rolling deploy', async () => {
    // allowed, remaining, reset_ms, retry_ms: the last unit of the window, then a denial
    expect((await consumeAsBefore(perMinute)).slice(0, 2)).toEqual(['1', '0']);
    expect((await consumeAsBefore(perMinute)).slice(0, 2)).toEqual(['0', '0']);
  });

  it('lets an instance of 0.1.0 migrate again meanwhile (it restarts during the deploy), and then cleans up again', async () => {
    await db.migrate();
    const store = storeOn(db, clock);
    clock.advance(60_000); // the next window
    expect(await store.consume([{ policy: perMinute, key: 'u', cost: 1 }])).toMatchObject([{ remaining: 4 }]);
    expect((await consumeAsBefore(perMinute)).slice(0, 2)).toEqual(['1', '3']);
    await store.migrate();
    expect((await schemaFunctions(db)).filter((f) => f.n !== 1 || f.proname.endsWith('_step'))).toEqual([]);
    await store.close();
  });

  it('is run again without a change (every start migrates)', async () => {
    const before = await schemaFunctions(db);
    const store = storeOn(db, clock);
    await store.migrate();
    expect(await schemaFunctions(db)).toEqual(before);
    await store.close();
  });
});
