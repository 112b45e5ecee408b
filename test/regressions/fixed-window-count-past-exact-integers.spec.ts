import { MemoryRateLimitStore, RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { redisForSpec } from '../support/redis-server.js';

// Regression: the Redis store's fixed window counts first (INCRBY of the cost onto `index × 2^21 + count`) and
// read the count before it from the reply, a Lua double. A cost near 2^53 (Number.MAX_SAFE_INTEGER, as a cost
// function may return) made the sum pass 2^53, the reply was rounded, and the denial reported a count one
// lower than the key held (remaining 1 where the memory store says 0). Found by the conformance suite.

const redis = redisForSpec();

describe('regression: a fixed window given a cost near 2^53 reads its count exactly', () => {
  const policy = validatePolicy({ name: 'day', algorithm: 'fixed-window', limit: 2, window: '1d' });
  const other = validatePolicy({ name: 'hour', algorithm: 'fixed-window', limit: 5, window: '1h' });

  it.each([
    ['alone', [policy]],
    ['with another fixed window in the same request', [policy, other]],
  ] as const)('%s: denied as the memory store denies it, and the count left as it was', async (_, policies) => {
    const clock = new FakeClock(1_700_000_000_000);
    const redisStore = new RedisRateLimitStore({ client: redis.shared, clock, keyPrefix: `huge-${policies.length}:` });
    const memoryStore = new MemoryRateLimitStore({ clock });
    const both = async (cost: number) => {
      const items = policies.map((p) => ({ policy: p, key: 'k', cost }));
      const expected = await memoryStore.consume(items);
      expect(await redisStore.consume(items)).toEqual(expected);
      return expected;
    };
    expect((await both(2)).map((d) => d.allowed)).toEqual(policies.map(() => true));
    const [huge] = await both(Number.MAX_SAFE_INTEGER);
    expect(huge).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: Infinity });
    // the count is still 2 of 2: a request of 1 is denied
    const [after] = await both(1);
    expect(after).toMatchObject({ allowed: false, remaining: 0 });
  });
});
