import { FIXED_WINDOW_COUNT_BITS } from '../../lib/algorithms/fixed-window/fixed-window.js';
import { RedisRateLimitStore, validatePolicy, type ResolvedPolicy } from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { ReferenceStore } from '../support/reference-store.js';
import { callsOf } from '../support/redis-commands.js';
import { redisForSpec } from '../support/redis-server.js';

const redis = redisForSpec();
let prefixes = 0;

const NOW = 1_796_053_232_358;
const HOUR = 3_600_000;
const SCALE = 2 ** FIXED_WINDOW_COUNT_BITS;
const INDEX = Math.floor(NOW / HOUR);
const hourly = (limit: number): ResolvedPolicy =>
  validatePolicy({ name: 'fw', algorithm: 'fixed-window', limit, window: '1h' });

function storeAt(clock: FakeClock): { store: RedisRateLimitStore; key: string } {
  const prefix = `f${++prefixes}:`;
  return {
    store: new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix: prefix }),
    key: storageKey(prefix, hourly(1), 'k'),
  };
}

describe('a fixed-window key in Redis', () => {
  it('holds one integer (index × 2^21 + count) that Redis keeps as an integer, moved by INCRBY within its window', async () => {
    const clock = new FakeClock(NOW);
    const { store, key } = storeAt(clock);
    const policy = hourly(100);
    await store.consume([{ policy, key: 'k', cost: 3 }]);
    expect(await redis.shared.get(key)).toBe(String(INDEX * SCALE + 3));
    expect(await redis.shared.object('ENCODING', key)).toBe('int');
    const ttl = await redis.shared.pttl(key);
    const before = await callsOf(redis.shared, 'incrby');
    clock.advance(1000);
    expect(nth(await store.consume([{ policy, key: 'k', cost: 2 }]), 0)).toMatchObject({
      allowed: true,
      remaining: 95,
    });
    expect(await callsOf(redis.shared, 'incrby')).toBe(before + 1);
    expect(await redis.shared.get(key)).toBe(String(INDEX * SCALE + 5));
    // the TTL still ends with the window (plus the slack)
    expect(await redis.shared.pttl(key)).toBeLessThanOrEqual(ttl);
    expect(await redis.shared.pttl(key)).toBeGreaterThan(ttl - 5000);
  });

  it('writes none of the fixed windows of a request that one of them denies: values, TTLs and absent keys as they were', async () => {
    const clock = new FakeClock(NOW);
    const { store } = storeAt(clock);
    const prefix = `f${prefixes}:`;
    const policies = ['a', 'b', 'c'].map((name, i) =>
      validatePolicy({ name, algorithm: 'fixed-window', limit: i === 2 ? 1 : 10, window: '1h' }),
    );
    await store.consume([{ policy: policies[0] as ResolvedPolicy, key: 'k', cost: 1 }]);
    await store.consume([{ policy: policies[2] as ResolvedPolicy, key: 'k', cost: 1 }]);
    const keys = policies.map((policy) => storageKey(prefix, policy, 'k'));
    const before = await Promise.all(
      keys.map(async (key) => [await redis.shared.get(key), await redis.shared.pttl(key)]),
    );
    const decisions = await store.consume(policies.map((policy) => ({ policy, key: 'k', cost: 1 })));
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 9],
      [true, 10],
      [false, 0],
    ]);
    const after = await Promise.all(
      keys.map(async (key) => [await redis.shared.get(key), await redis.shared.pttl(key)]),
    );
    expect(after.map(([value]) => value)).toEqual(before.map(([value]) => value));
    expect(after[1]).toEqual([null, -2]);
    for (const [i, [, ttl]] of after.entries()) expect(Number(ttl)).toBeLessThanOrEqual(Number(before[i]?.[1]));
  });

  it.each([
    ['packed', () => Buffer.concat([int6(INDEX), int6(7)])],
    ['text', () => Buffer.from(`${INDEX}:7`)],
  ])('reads a state the previous version wrote (%s), and counts on from it', async (_, previous) => {
    const clock = new FakeClock(NOW);
    const { store, key } = storeAt(clock);
    await redis.shared.set(key, previous(), 'PX', HOUR);
    const policy = hourly(10);
    expect(nth(await store.consume([{ policy, key: 'k', cost: 2 }]), 0)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await redis.shared.get(key)).toBe(String(INDEX * SCALE + 9));
    expect(nth(await store.consume([{ policy, key: 'k', cost: 2 }]), 0)).toMatchObject({ allowed: false });
    // and with other policies, all or nothing
    const other = validatePolicy({ name: 'other', algorithm: 'gcra', limit: 10, window: '1h' });
    const [fw, g] = await store.consume([
      { policy, key: 'k', cost: 1 },
      { policy: other, key: 'k', cost: 1 },
    ]);
    expect([fw?.allowed, g?.allowed]).toEqual([true, true]);
    expect(await redis.shared.get(key)).toBe(String(INDEX * SCALE + 10));
  });

  it.each([
    ['a count of 2^21 or more', hourly(3 * SCALE), SCALE + 5, NOW],
    [
      'a window index of 2^32 or more (a window under a second)',
      validatePolicy({ name: 'fw', algorithm: 'fixed-window', limit: 10, window: 100 }),
      1,
      NOW,
    ],
  ])('keeps %s as a packed pair, decided as the reference decides', async (_, policy, cost, now) => {
    const clock = new FakeClock(now);
    const { store } = storeAt(clock);
    const key = storageKey(`f${prefixes}:`, policy, 'k');
    const reference = new ReferenceStore(clock);
    for (const c of [cost, 1, 1]) {
      expect(await store.consume([{ policy, key: 'k', cost: c }])).toEqual(
        await reference.consume([{ policy, key: 'k', cost: c }]),
      );
      expect((await redis.shared.getBuffer(key))?.length).toBe(12);
    }
  });
});

function int6(n: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeIntBE(n, 0, 6);
  return b;
}
