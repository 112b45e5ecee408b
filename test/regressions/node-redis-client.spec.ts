import { Test } from '@nestjs/testing';
import { createClient } from 'redis';

import { RateLimitModule, RedisRateLimitStore } from '../../lib/index.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// Regression: `redis: { client }` given a connected node-redis client started the app; every store call then
// failed (TypeError: Function.prototype.apply was called on undefined), the breaker opened, and every
// fail-open policy admitted everything.

describe('regression: a client the module cannot drive turns it off', () => {
  let redis: TestRedis;
  let client: ReturnType<typeof createClient>;
  beforeAll(async () => {
    redis = await startRedis();
    client = createClient({ url: redis.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.quit();
    await redis.stop();
  });

  it('stops the start, saying what was given and what is accepted', async () => {
    const compiled = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { client: client as never } })],
    }).compile();
    await expect(compiled).rejects.toThrow(
      /option redis\.client is a node-redis client \(createClient\(\) of the `redis` package\).*ioredis Redis or Cluster/,
    );
  });

  it('refuses it as the client of a RedisRateLimitStore too', () => {
    expect(() => new RedisRateLimitStore({ client: client as never })).toThrow(/node-redis client.*cannot drive/);
  });

  it('names what is missing from an object that is no Redis client at all', () => {
    expect(() => new RedisRateLimitStore({ client: {} as never })).toThrow(
      /an instance of Object \(it has no call, evalsha, eval, script, ping\)/,
    );
  });
});
