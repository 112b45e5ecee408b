import { MemoryRateLimitStore, RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis.stop());

test('smoke', async () => {
  const clock = new FakeClock();
  const store = new RedisRateLimitStore({ client: redis.client(), clock });
  const mem = new MemoryRateLimitStore({ clock });
  for (const algorithm of ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'] as const) {
    const policy = validatePolicy({ algorithm, limit: 3, window: '1s' });
    for (let i = 0; i < 5; i++) {
      const a = await store.consume([{ policy, key: 'k', cost: 1 }]);
      const b = await mem.consume([{ policy, key: 'k', cost: 1 }]);
      expect(a).toEqual(b);
      clock.advance(100);
    }
  }
});
