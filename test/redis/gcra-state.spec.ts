import fc from 'fast-check';

import { ALGORITHM_STEPS } from '../../lib/algorithms/index.js';
import { GCRA_EXPIRY_EPOCH_MS } from '../../lib/algorithms/gcra/gcra.js';
import { RedisRateLimitStore, validatePolicy, type ResolvedPolicy } from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { GCRA_LUA, luaFiles, PRELUDE_LUA, STATE_CODEC_LUA } from '../support/lua-files.js';
import { callsOf, writesRun } from '../support/redis-commands.js';
import { ReferenceStore } from '../support/reference-store.js';
import { redisForSpec } from '../support/redis-server.js';

const redis = redisForSpec();
let prefixes = 0;

const NOW = 1_796_053_232_358;

function storeAt(clock: FakeClock): { store: RedisRateLimitStore; prefix: string } {
  const prefix = `g${++prefixes}:`;
  return { store: new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix: prefix }), prefix };
}

/** A per-plan policy's variant with `limit`, as the engine makes it (LimitVariants). */
function plan(name: string, limit: number): ResolvedPolicy {
  const declared = validatePolicy({ name, algorithm: 'gcra', limit: () => limit, window: '1s' });
  return Object.freeze({ ...declared, limit, capacity: limit });
}

describe('a GCRA key in Redis', () => {
  it('holds one integer, the TAT in µs, at least 12 bytes below a token bucket key (MEMORY USAGE)', async () => {
    const clock = new FakeClock(NOW);
    const { store, prefix } = storeAt(clock);
    // same key length: the policies' names have the same length
    const gcra = validatePolicy({ name: 'gcra', algorithm: 'gcra', limit: 3, window: '1m' });
    const bucket = validatePolicy({ name: 'tbkt', algorithm: 'token-bucket', limit: 3, window: '1m' });
    await store.consume([{ policy: gcra, key: 'user-42', cost: 1 }]);
    await store.consume([{ policy: bucket, key: 'user-42', cost: 1 }]);
    const gcraKey = storageKey(prefix, gcra, 'user-42');
    const bucketKey = storageKey(prefix, bucket, 'user-42');
    expect(gcraKey.length).toBe(bucketKey.length);
    expect(await redis.shared.get(gcraKey)).toBe(String(NOW * 1000 + 20_000_000));
    expect(await redis.shared.object('ENCODING', gcraKey)).toBe('int');
    const gcraBytes = Number(await redis.shared.memory('USAGE', gcraKey, 'SAMPLES', 0));
    const bucketBytes = Number(await redis.shared.memory('USAGE', bucketKey, 'SAMPLES', 0));
    expect(gcraBytes).toBeLessThanOrEqual(bucketBytes - 12);
    // the TTL runs until the end of the TAT's epoch (GCRA_EXPIRY_EPOCH_MS), plus the store's slack
    const ttlMs = await redis.shared.pttl(gcraKey);
    expect(ttlMs).toBeGreaterThan(20_000);
    expect(ttlMs).toBeLessThanOrEqual(20_000 + 60_000);
  });

  it('counts a consume by INCRBY alone while its TAT stays in its epoch, and extends the key when it leaves', async () => {
    // 60 a minute: T = 1 s, the epoch (GCRA_EXPIRY_EPOCH_MS) 10 s; the clock at an epoch's start, standing still
    const start = Math.floor(NOW / GCRA_EXPIRY_EPOCH_MS) * GCRA_EXPIRY_EPOCH_MS;
    const clock = new FakeClock(start);
    const prefix = `g${++prefixes}:`;
    const store = new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix: prefix, ttlSlackMs: 0 });
    const policy = validatePolicy({ name: 'tat', algorithm: 'gcra', limit: 60, window: '1m' });
    const key = storageKey(prefix, policy, 'k');
    const written = async () => ({
      incrby: await callsOf(redis.shared, 'incrby'),
      set: await callsOf(redis.shared, 'set'),
      pexpire: await callsOf(redis.shared, 'pexpire'),
    });
    for (let n = 1; n <= 15; n++) {
      const before = await written();
      const [decision] = await store.consume([{ policy, key: 'k', cost: 1 }]);
      expect(decision).toMatchObject({ allowed: true, remaining: 60 - n, resetMs: n * 1000 });
      const after = await written();
      // the first makes the key (SET alone); the 10th moves the TAT into the next epoch (PEXPIRE); the rest
      // INCRBY alone
      expect([after.incrby - before.incrby, after.set - before.set, after.pexpire - before.pexpire]).toEqual([
        n === 1 ? 0 : 1,
        n === 1 ? 1 : 0,
        n === 10 ? 1 : 0,
      ]);
      expect(await redis.shared.get(key)).toBe(String((start + n * 1000) * 1000));
      // the key outlives its TAT, n s ahead (Redis counts its TTL in real time: a second's margin for the test)
      expect(await redis.shared.pttl(key)).toBeGreaterThan(n * 1000 - 1000);
    }
  });

  it.each([
    ['a request of several policies', 'several'],
    ['a refund', 'refund'],
  ] as const)("keeps a TAT that %s wrote to its epoch's end, as a consume by INCRBY alone relies on", async (_, by) => {
    const start = Math.floor(NOW / GCRA_EXPIRY_EPOCH_MS) * GCRA_EXPIRY_EPOCH_MS;
    const clock = new FakeClock(start);
    const prefix = `g${++prefixes}:`;
    const store = new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix: prefix, ttlSlackMs: 0 });
    const policy = validatePolicy({ name: 'tat', algorithm: 'gcra', limit: 60, window: '1m' });
    const bucket = validatePolicy({ name: 'bkt', algorithm: 'token-bucket', limit: 60, window: '1m' });
    const key = storageKey(prefix, policy, 'k');
    if (by === 'several') {
      await store.consume([
        { policy, key: 'k', cost: 5 },
        { policy: bucket, key: 'k', cost: 1 },
      ]);
    } else {
      await store.consume([{ policy, key: 'k', cost: 6 }]);
      await store.refund([{ policy, key: 'k', cost: 1 }]);
    }
    expect(await redis.shared.get(key)).toBe(String((start + 5_000) * 1000));
    const pexpire = await callsOf(redis.shared, 'pexpire');
    // 9 s ahead, still in the first epoch: nothing extends the key, which must already outlive the TAT
    expect(await store.consume([{ policy, key: 'k', cost: 4 }])).toMatchObject([{ allowed: true, resetMs: 9_000 }]);
    expect(await callsOf(redis.shared, 'pexpire')).toBe(pexpire);
    expect(await redis.shared.pttl(key)).toBeGreaterThan(9_000 - 1000);
  });

  it('reads a denied consume and writes nothing, leaving the TAT and its TTL as they were', async () => {
    const clock = new FakeClock(NOW);
    const { store, prefix } = storeAt(clock);
    const policy = validatePolicy({ name: 'den', algorithm: 'gcra', limit: 2, window: '1m' });
    const key = storageKey(prefix, policy, 'k');
    await store.consume([{ policy, key: 'k', cost: 2 }]);
    const tat = await redis.shared.get(key);
    const writes = await writesRun(redis.shared);
    const [denied] = await store.consume([{ policy, key: 'k', cost: 1 }]);
    expect(denied).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 30_000 });
    expect(await writesRun(redis.shared)).toBe(writes);
    expect(await redis.shared.get(key)).toBe(tat);
  });

  it('leaves a value that is not an integer as Redis writes one to the twin, which reads it as no state', async () => {
    const clock = new FakeClock(NOW);
    const { store, prefix } = storeAt(clock);
    const reference = new ReferenceStore(clock);
    const policy = validatePolicy({ name: 'odd', algorithm: 'gcra', limit: 2, window: '1m' });
    const key = storageKey(prefix, policy, 'k');
    // ahead of now, as a TAT would be, but with a fraction: INCRBY refuses it, having written nothing
    await redis.shared.set(key, `${NOW * 1000 + 5_000_000}.5`, 'PX', 60_000);
    const [decision] = await store.consume([{ policy, key: 'k', cost: 1 }]);
    expect(decision).toEqual(nth(await reference.consume([{ policy, key: 'k', cost: 1 }]), 0));
    expect(await redis.shared.get(key)).toBe(String(NOW * 1000 + 30_000_000));
  });

  it('keeps a per-plan state as its TAT and limit in 12 bytes', async () => {
    const clock = new FakeClock(NOW);
    const { store, prefix } = storeAt(clock);
    await store.consume([{ policy: plan('plan', 10), key: 'k', cost: 2 }]);
    const raw = await redis.shared.getBuffer(storageKey(prefix, plan('plan', 10), 'k'));
    expect(raw?.length).toBe(12);
    const first = raw?.[0] ?? 0;
    expect(first >= 64 && first < 96).toBe(true);
  });

  it('converts the lead of a plan change: what was taken stays taken, draining at the limit it was written with', async () => {
    const clock = new FakeClock(NOW);
    const { store } = storeAt(clock);
    const reference = new ReferenceStore(clock);
    const both = async (policy: ResolvedPolicy, cost: number) => {
      const expected = await reference.consume([{ policy, key: 'k', cost }]);
      expect(await store.consume([{ policy, key: 'k', cost }])).toEqual(expected);
      return nth(expected, 0);
    };
    expect(await both(plan('p', 10), 8)).toMatchObject({ allowed: true, remaining: 2 });
    clock.advance(200); // 6 of the 10-per-second units still taken
    // a downgrade to 4 per second: 6 taken is more than it holds; they drain at 10 per second
    expect(await both(plan('p', 4), 1)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 300 });
    clock.advance(300); // 3 taken
    expect(await both(plan('p', 4), 1)).toMatchObject({ allowed: true, remaining: 0 });
    // now written at 4 per second: 4 taken, the first back 250 ms later
    expect(await both(plan('p', 4), 1)).toMatchObject({ allowed: false, retryAfterMs: 250 });
    // an upgrade to 100 per second: 4 of 100 taken
    expect(await both(plan('p', 100), 0)).toMatchObject({ allowed: true, remaining: 96 });
  });
});

describe("a GCRA key written by the previous twin (the token bucket's state) during a rolling deploy", () => {
  // The previous version decided GCRA with the token bucket's twin: its state is what a token-bucket policy
  // of the same name writes (under the same key: the tests give the GCRA policy the bucket's shape). With a limit that divides 1000 × window, GCRA and the bucket decide alike, so the
  // key must go on deciding exactly as the bucket would have, first from the old state, then from its own.
  it('is read as the TAT it stands for, packed or as text', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1, 2, 4, 5, 8, 10, 20, 25, 40),
        fc.integer({ min: 1, max: 60 }),
        fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
        fc.boolean(),
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 0, max: 12 }) }), {
          minLength: 2,
          maxLength: 30,
        }),
        fc.nat(),
        async (limit, seconds, burst, asText, ops, cut) => {
          const clock = new FakeClock(NOW);
          const { store, prefix } = storeAt(clock);
          const reference = new ReferenceStore(clock);
          const source = { name: 'same', limit, window: seconds * 1000, burst };
          const bucket = validatePolicy({ ...source, algorithm: 'token-bucket' });
          // the same key: a key of the previous layout (shapes now keep the two algorithms' keys apart)
          const gcra = { ...validatePolicy({ ...source, algorithm: 'gcra' }), shape: bucket.shape };
          const switchAt = 1 + (cut % (ops.length - 1));
          for (const [i, { dt, cost }] of ops.entries()) {
            clock.advance(dt);
            const policy = i < switchAt ? bucket : gcra;
            const expected = await reference.consume([{ policy: bucket, key: 'k', cost }]);
            expect(await store.consume([{ policy, key: 'k', cost }])).toEqual(expected);
            if (asText && i === switchAt - 1) await asTextState(storageKey(prefix, gcra, 'k'));
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('of a per-plan policy keeps draining at the limit it was written with', async () => {
    const clock = new FakeClock(NOW);
    const { store, prefix } = storeAt(clock);
    const declared = validatePolicy({ name: 'old', algorithm: 'token-bucket', limit: 10, window: '1s' });
    await store.consume([{ policy: declared, key: 'k', cost: 8 }]); // rated state: 8 × 1000 units at limit 10
    clock.advance(200);
    // the same state as the new twin would have written it: 6 units of 100 000 µs ahead
    const converted = { tatUs: NOW * 1000 + 800_000, limit: 10 };
    const policy = { ...plan('old', 4), shape: declared.shape }; // the same key, of the previous layout
    const step = ALGORITHM_STEPS['gcra-per-plan'].step(converted, policy, clock.now(), 1);
    const [decision] = await store.consume([{ policy, key: 'k', cost: 1 }]);
    expect(decision).toMatchObject({ allowed: false, remaining: step.remaining, retryAfterMs: step.retryAfterMs });
    expect(step).toMatchObject({ remaining: 0, retryAfterMs: 300 });
    expect(await redis.shared.getBuffer(storageKey(prefix, policy, 'k'))).toHaveLength(12); // still the old state
  });
});

/** Rewrites a packed token-bucket state as the text form of the same numbers, which the twins also read. */
async function asTextState(key: string): Promise<void> {
  await redis.shared.eval(
    `${luaFiles(PRELUDE_LUA, STATE_CODEC_LUA)}
     local raw = redis.call('GET', KEYS[1])
     if not raw then return 0 end
     local a, t, r = rated_decode(raw)
     redis.call('SET', KEYS[1], fmt(a) .. ':' .. fmt(t) .. ':' .. fmt(r), 'KEEPTTL')
     return 1`,
    1,
    key,
  );
}

describe("the Lua twin's mul_div_ceil", () => {
  it('is ceil(a × b / c) exactly, also where a × b leaves the exact integers of a double', async () => {
    // c below 2^51 (an interval or a limit), b below 2^52, a chosen so that the result stays below 2^53
    const triple = fc
      .tuple(
        fc.bigInt({ min: 1n, max: 2n ** 51n - 1n }),
        fc.bigInt({ min: 1n, max: 2n ** 52n - 1n }),
        fc.bigInt({ min: 0n, max: 2n ** 53n - 2n }),
      )
      .map(([c, b, x]) => {
        const a = (x * c) / b;
        return [a < 2n ** 52n ? a : 2n ** 52n - 1n, b, c] as const;
      })
      .filter(([a, b, c]) => (a * b + c - 1n) / c < 2n ** 53n);
    await fc.assert(
      fc.asyncProperty(fc.array(triple, { minLength: 1, maxLength: 50 }), async (valid) => {
        const args = valid.flatMap((t) => t.map(String));
        const got = (await redis.shared.eval(
          `${luaFiles(PRELUDE_LUA, STATE_CODEC_LUA, GCRA_LUA)}
           local out = {}
           for i = 1, #ARGV, 3 do
             out[#out + 1] = fmt(mul_div_ceil(tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])))
           end
           return out`,
          0,
          ...args,
        )) as string[];
        expect(got).toEqual(valid.map(([a, b, c]) => String((a * b + c - 1n) / c)));
      }),
      { numRuns: 50 },
    );
  });
});
