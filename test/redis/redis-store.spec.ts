import { FIXED_WINDOW_COUNT_BITS } from '../../lib/algorithms/fixed-window/fixed-window.js';
import { RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { consumeFromProcesses } from '../support/processes.js';
import { nth } from '../support/harness.js';
import { policyOf } from '../support/policies.js';
import { redisForSpec, startRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { callsOf } from '../support/redis-commands.js';
import { alignedStart, TEST_START_MS } from '../support/time.js';

const redis = redisForSpec();
let prefixes = 0;
const nextPrefix = (): string => `s${++prefixes}:`;

describe.each(ALGORITHMS)('%s under concurrency', (algorithm) => {
  const policy = validatePolicy(policyOf(algorithm, { name: 'flood', limit: 100, window: '1m' }));

  it('admits exactly 100 of 200 concurrent consumes over 4 connections', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const keyPrefix = nextPrefix();
    const stores = Array.from(
      { length: 4 },
      () => new RedisRateLimitStore({ client: redis.client(), clock, keyPrefix }),
    );
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => nth(stores, i % 4).consume([{ policy, key: 'one-key', cost: 1 }])),
    );
    expect(decisions.filter((r) => nth(r, 0).allowed)).toHaveLength(100);
  });

  it('admits exactly 100 of 200 consumes from 4 processes at once', async () => {
    expect(await consumeFromProcesses(String(redis.port), algorithm, nextPrefix())).toBe(100);
  });
});

describe('RedisRateLimitStore', () => {
  it('consumes nothing from any policy when one denies (read back from Redis)', async () => {
    const keyPrefix = nextPrefix();
    const store = new RedisRateLimitStore({ client: redis.shared, clock: new FakeClock(TEST_START_MS), keyPrefix });
    const wide = validatePolicy({ name: 'wide', algorithm: 'token-bucket', limit: 100, window: '1m' });
    const narrow = validatePolicy({ name: 'narrow', algorithm: 'fixed-window', limit: 1, window: '1m' });
    await store.consume([{ policy: narrow, key: 'u', cost: 1 }]);
    const wideKey = storageKey(keyPrefix, wide, 'u');
    const before = await redis.shared.get(wideKey);
    await store.consume([{ policy: wide, key: 'u', cost: 5 }]);
    const after = await redis.shared.get(wideKey);
    expect(after).not.toBeNull();
    const [w, n] = await store.consume([
      { policy: wide, key: 'u', cost: 5 },
      { policy: narrow, key: 'u', cost: 1 },
    ]);
    expect(n?.allowed).toBe(false);
    expect(w).toMatchObject({ allowed: true, remaining: 95 });
    expect(before).toBeNull();
    expect(await redis.shared.get(wideKey)).toBe(after);
    expect((await store.peek([{ policy: wide, key: 'u' }]))[0]?.remaining).toBe(95);
  });

  it('decides 3 policies with exactly one command to Redis', async () => {
    const store = new RedisRateLimitStore({ client: redis.shared, keyPrefix: nextPrefix() });
    const policies = (['sliding-window-counter', 'token-bucket', 'gcra'] as const).map((algorithm, i) =>
      validatePolicy({ name: `p${i}`, algorithm, limit: 10, window: '1m' }),
    );
    await store.load();
    const monitor = await redis.client().monitor();
    const sent: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') sent.push(args);
    });
    await store.consume(policies.map((policy) => ({ policy, key: 'u', cost: 1 })));
    await redis.shared.ping('end-of-decision');
    await waitFor(async () => sent.some((args) => args[1] === 'end-of-decision'), 'the PING in MONITOR');
    monitor.disconnect();
    const decision = sent.slice(
      0,
      sent.findIndex((args) => args[1] === 'end-of-decision'),
    );
    // Redis 7: the function, whose twins are built once (a script would rebuild them at every call)
    expect(decision.map((args) => args[0]?.toLowerCase())).toEqual(['fcall']);
  });

  it('uses the script on a Redis without functions (FCALL renamed away, as before Redis 7), reloaded after SCRIPT FLUSH', async () => {
    const old = await startRedis({ args: ['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', ''] });
    try {
      const store = new RedisRateLimitStore({
        client: old.client(),
        clock: new FakeClock(TEST_START_MS),
        keyPrefix: nextPrefix(),
      });
      const policy = validatePolicy({ name: 'p', algorithm: 'gcra', limit: 10, window: '1m' });
      await store.load();
      for (let i = 9; i >= 7; i--) expect((await store.consume([{ policy, key: 'u', cost: 1 }]))[0]?.remaining).toBe(i);
      expect(await callsOf(old.client(), 'evalsha')).toBe(3);
      // SCRIPT FLUSH (or a restart): EVALSHA answers NOSCRIPT, and one EVAL sends the script again.
      await old.client().script('FLUSH');
      expect((await store.consume([{ policy, key: 'u', cost: 1 }]))[0]?.remaining).toBe(6);
      expect(await callsOf(old.client(), 'eval')).toBe(1);
    } finally {
      await old.stop();
    }
  });

  it('reloads its function or script after SCRIPT FLUSH, FLUSHALL and FUNCTION FLUSH without failing a request', async () => {
    const store = new RedisRateLimitStore({
      client: redis.shared,
      clock: new FakeClock(TEST_START_MS),
      keyPrefix: nextPrefix(),
    });
    const policy = validatePolicy({ name: 'p', algorithm: 'gcra', limit: 10, window: '1m' });
    expect((await store.consume([{ policy, key: 'u', cost: 1 }]))[0]?.remaining).toBe(9);
    await redis.shared.script('FLUSH');
    expect((await store.consume([{ policy, key: 'u', cost: 1 }]))[0]?.remaining).toBe(8);
    await redis.shared.flushall();
    expect((await store.consume([{ policy, key: 'u', cost: 1 }]))[0]?.remaining).toBe(9);
    await redis.shared.call('FUNCTION', 'FLUSH');
    expect((await store.consume([{ policy, key: 'u', cost: 1 }]))[0]?.remaining).toBe(8);
  });

  it('leaves the caller’s client as it was', async () => {
    const own = redis.client();
    await own.ping();
    const before = Object.keys(own).sort();
    const store = new RedisRateLimitStore({ client: own, keyPrefix: nextPrefix() });
    const policy = validatePolicy({ name: 'p', algorithm: 'gcra', limit: 10, window: '1m' });
    await store.consume([{ policy, key: 'u', cost: 1 }]);
    expect(Object.keys(own).sort()).toEqual(before);
    expect(own.status).toBe('ready');
    expect(own.scriptsSet).toEqual({});
  });

  it('hash-tags keys and stores every identity as its keyed hash', async () => {
    const keyPrefix = nextPrefix();
    const store = new RedisRateLimitStore({ client: redis.shared, keyPrefix });
    const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 10, window: '1m' });
    const identities = ['user-42', 'x'.repeat(10_000), 'a}{b', 'line\nbreak'];
    for (const key of identities) await store.consume([{ policy, key, cost: 1 }]);
    const keys = (await redis.shared.keys(`${keyPrefix}*`)).sort();
    expect(keys).toEqual(identities.map((key) => storageKey(keyPrefix, policy, key)).sort());
    for (const key of keys) expect(key).toMatch(/^s\d+:\{p:[A-Za-z0-9_-]{16}\}$/);
  });

  it('with readableKeys, keeps short plain identities in keys as they are and hashes long or unsafe ones', async () => {
    const keyPrefix = nextPrefix();
    const store = new RedisRateLimitStore({ client: redis.shared, keyPrefix, readableKeys: true });
    const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 10, window: '1m' });
    const identities = ['user-42', 'x'.repeat(10_000), 'a}{b', 'line\nbreak'];
    for (const key of identities) await store.consume([{ policy, key, cost: 1 }]);
    const keys = (await redis.shared.keys(`${keyPrefix}*`)).sort();
    expect(keys).toEqual(identities.map((key) => storageKey(keyPrefix, policy, key, { readableKeys: true })).sort());
    expect(keys).toContain(`${keyPrefix}{p|fw1m:user-42}`);
    for (const key of keys) expect(key).toMatch(/^s\d+:\{p\|fw1m:(user-42|#[A-Za-z0-9_-]{16})\}$/);
  });

  it('takes time from Redis TIME with clock: "store"', async () => {
    const keyPrefix = nextPrefix();
    const store = new RedisRateLimitStore({ client: redis.shared, clock: 'store', keyPrefix });
    const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 10, window: '1h' });
    const [seconds] = await redis.shared.time();
    const d = nth(await store.consume([{ policy, key: 'u', cost: 1 }]), 0);
    const windowEnd = (Math.floor((Number(seconds) * 1000) / 3_600_000) + 1) * 3_600_000;
    expect(Math.abs(Number(seconds) * 1000 + d.resetMs - windowEnd)).toBeLessThan(2000);
    // the fixed window's state, one integer: the window's index (from Redis' clock) and its count
    const state = Number(await redis.shared.get(storageKey(keyPrefix, policy, 'u')));
    const scale = 2 ** FIXED_WINDOW_COUNT_BITS;
    expect([Math.floor(state / scale), state % scale]).toEqual([Math.floor((Number(seconds) * 1000) / 3_600_000), 1]);
  });

  it('puts a TTL on every key and leaves none behind once the longest window has passed', async () => {
    const keyPrefix = nextPrefix();
    // A clock at a common start of every window: each key's TTL is then at least 2/5 of its window, however
    // slowly the test runs. Redis counts the TTL itself in real time.
    const windows = [300, 400, 500, 600, 700, 350, 450];
    const clock = new FakeClock(alignedStart(42_000));
    const store = new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix, ttlSlackMs: 0 });
    const policies = ALGORITHMS.map((algorithm, i) =>
      validatePolicy(policyOf(algorithm, { name: `p${i}`, limit: 5, window: nth(windows, i) })),
    );
    for (let i = 0; i < 3; i++) await store.consume(policies.map((policy) => ({ policy, key: `u${i}`, cost: 2 })));
    const keys = await redis.shared.keys(`${keyPrefix}*`);
    expect(keys).toHaveLength(3 * ALGORITHMS.length);
    // A quota's key lives until its calendar day ends (UTC here), not a window: it is what stays behind.
    const quotaKey = (key: string) => key.startsWith(`${keyPrefix}{p${ALGORITHMS.indexOf('quota')}:`);
    const dayLeftMs = 86_400_000 - (clock.now() % 86_400_000);
    for (const key of keys) {
      const ttl = await redis.shared.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      // at most two windows (the sliding counter's previous window); a quota's, the rest of its day
      expect(ttl).toBeLessThanOrEqual(quotaKey(key) ? dayLeftMs : 2 * 700);
    }
    await new Promise((resolve) => setTimeout(resolve, 2 * 700 + 100));
    expect((await redis.shared.keys(`${keyPrefix}*`)).sort()).toEqual(keys.filter(quotaKey).sort());
  });
});
