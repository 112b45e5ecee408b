import {
  PostgresRateLimitStore,
  validatePolicy,
  type RateLimitDecision,
  type RateLimitStoreItem,
} from '../../lib/index.js';
import { periodOf } from '../../lib/algorithms/quota/quota.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { migratedSchema } from '../support/postgres.js';
import { ReferenceStore } from '../support/reference-store.js';
import { TEST_START_MS } from '../support/time.js';

const db = migratedSchema('sb');
const store = (clock: FakeClock, keyPrefix?: string): PostgresRateLimitStore =>
  db.store(keyPrefix === undefined ? { clock } : { clock, keyPrefix });

const blocking = (name: string, algorithm: 'token-bucket' | 'concurrency' | 'fixed-window', limit: number) =>
  validatePolicy({ name, algorithm, limit, window: '1m', block: '30s' });

describe('shadow items and blocks on PostgreSQL', () => {
  it('decide like the reference when consumes with shadow items and blocks go out together (rounds of one item and of several)', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const s = store(clock);
    const reference = new ReferenceStore(clock);
    const bucket = blocking('bucket', 'token-bucket', 2);
    const leases = blocking('leases', 'concurrency', 3);
    const shadow = validatePolicy({ name: 'shadow', algorithm: 'sliding-window-log', limit: 1, window: '1m' });
    const daily = validatePolicy({ name: 'daily', algorithm: 'quota', limit: 2, period: 'day', block: '1h' });
    const requests = (user: string, i: number): RateLimitStoreItem[][] => [
      [{ policy: bucket, key: user, cost: 1 }],
      [{ policy: daily, key: user, cost: 1 }],
      [
        { policy: leases, key: user, cost: 1 },
        { policy: shadow, key: user, cost: 1, shadow: true },
      ],
      [
        { policy: bucket, key: `${user}-b`, cost: 1 + (i % 3) },
        { policy: daily, key: `${user}-b`, cost: 1 },
        { policy: shadow, key: `${user}-b`, cost: 1, shadow: true },
      ],
    ];
    const users = Array.from({ length: 12 }, (_, i) => `user-${i}`);
    for (let turn = 0; turn < 4; turn++) {
      // one key per request of a turn: the order within and across statements cannot change a decision
      const batch = users.flatMap((user, i) => requests(user, i + turn));
      const actual = await Promise.all(batch.map((items) => s.consume(items)));
      const expected: RateLimitDecision[][] = [];
      for (const items of batch) expected.push(await reference.consume(items));
      expect(actual).toEqual(expected);
      const peeks = (target: PostgresRateLimitStore | ReferenceStore) =>
        Promise.all(batch.map((items) => target.peek(items)));
      expect(await peeks(s)).toEqual(await peeks(reference));
      clock.advance(10_000);
    }
  });

  it('deny the later requests of one key in a statement once a denial in an earlier round has blocked it', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const s = store(clock);
    const reference = new ReferenceStore(clock);
    const policy = blocking('flood', 'fixed-window', 3);
    const other = validatePolicy({ name: 'other', algorithm: 'sliding-window-counter', limit: 100, window: '1h' });
    const request = (i: number): RateLimitStoreItem[] =>
      i % 2 === 0
        ? [{ policy, key: 'k', cost: 1 }]
        : [
            { policy, key: 'k', cost: 1 },
            { policy: other, key: 'k', cost: 1 },
          ];
    // the batcher keeps arrival order on a key: the reference, one after the other, decides the same
    const actual = await Promise.all(Array.from({ length: 12 }, (_, i) => s.consume(request(i))));
    const expected: RateLimitDecision[][] = [];
    for (let i = 0; i < 12; i++) expected.push(await reference.consume(request(i)));
    expect(actual).toEqual(expected);
    expect(actual.map((r) => nth(r, 0).blocked === true)).toEqual([...Array(3).fill(false), ...Array(9).fill(true)]);
    expect((await s.peek([{ policy: other, key: 'k' }]))[0]?.remaining).toBe(99);
  });

  it('decide a request with two items on one key, shadow or blocking, like the reference (the general function)', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const s = store(clock);
    const reference = new ReferenceStore(clock);
    const policy = blocking('twice', 'token-bucket', 3);
    const twice = (first: number, second: number, shadow: boolean): RateLimitStoreItem[] => [
      { policy, key: 'k', cost: first },
      { policy, key: 'k', cost: second, shadow },
    ];
    for (const [first, second, shadow] of [
      [1, 3, true],
      [1, 1, false],
      [1, 2, false],
      [1, 1, true],
    ] as const) {
      clock.advance(7000);
      expect(await s.consume(twice(first, second, shadow))).toEqual(
        await reference.consume(twice(first, second, shadow)),
      );
      expect(await s.peek(twice(0, 0, false))).toEqual(await reference.peek(twice(0, 0, false)));
    }
  });

  it('keep a block in its row beside the state it leaves as it was, and refund keeps it', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const keyPrefix = 'sb-kept:';
    const s = store(clock, keyPrefix);
    const policy = blocking('kept', 'token-bucket', 2);
    const item = { policy, key: 'u', cost: 1 };
    await s.consume([item]);
    await s.consume([item]);
    // undefined once the key is reset
    const row = async () =>
      (
        await db.pool.query<{ state: string; blocked_until: string | null }>(
          `SELECT state, blocked_until FROM ${db.schema}.rate_limit_state WHERE key = $1`,
          [storageKey(keyPrefix, policy, 'u')],
        )
      ).rows[0];
    const before = await row();
    expect(before?.blocked_until).toBeNull(); // fails if there is no row: undefined is not null
    expect((await s.consume([item]))[0]).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 30_000 });
    expect(await row()).toEqual({ state: before?.state, blocked_until: String(clock.now() + 30_000) });
    clock.advance(1000);
    expect((await s.refund([{ ...item, cost: 2 }]))[0]).toMatchObject({ blocked: true, retryAfterMs: 29_000 });
    expect((await row())?.blocked_until).toBe(String(clock.now() + 29_000));
    await s.reset([item]);
    expect(await row()).toBeUndefined();
    expect((await s.consume([item]))[0]).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('block quotas on their newest period, across the period edge, until unblocked or reset, their usage kept', async () => {
    const clock = new FakeClock(Date.UTC(2026, 4, 10, 23, 59, 50));
    const s = store(clock);
    const daily = validatePolicy({ name: 'daily-ban', algorithm: 'quota', limit: 2, period: 'day', block: '1m' });
    const item = { policy: daily, key: 'u', cost: 1 };
    const today = periodOf(daily, clock.now()).startMs;
    await s.consume([item]);
    await s.consume([item]);
    expect((await s.consume([item]))[0]).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 60_000 });
    clock.advance(20_000); // the next day: a new period, but the block of the last one still runs
    expect((await s.consume([item]))[0]).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 40_000 });
    expect((await s.peek([item]))[0]).toMatchObject({ blocked: true, retryAfterMs: 40_000 });
    await s.unblock([item]);
    expect((await s.consume([item]))[0]).toMatchObject({ allowed: true, remaining: 1 });
    expect(await s.quotaUsage(daily, 'u', today)).toEqual({ used: 2, limit: 2 });

    await s.block([item], 5_000); // by hand: on the row of this period, its usage kept
    expect((await s.consume([item]))[0]).toMatchObject({ blocked: true, retryAfterMs: 5_000 });
    expect((await s.refund([item]))[0]).toMatchObject({ blocked: true, retryAfterMs: 5_000 });
    await s.reset([item]);
    expect((await s.consume([item]))[0]).toMatchObject({ allowed: true, remaining: 1 });
    expect(await s.quotaUsage(daily, 'u', today)).toEqual({ used: 2, limit: 2 }); // history stays

    await s.block([{ policy: daily, key: 'fresh' }], 5_000); // a key without usage
    expect((await s.peek([{ policy: daily, key: 'fresh' }]))[0]).toMatchObject({ blocked: true, retryAfterMs: 5_000 });
    await s.unblock([{ policy: daily, key: 'fresh' }]);
    expect((await s.peek([{ policy: daily, key: 'fresh' }]))[0]).toMatchObject({ allowed: true, remaining: 2 });
  });
});
