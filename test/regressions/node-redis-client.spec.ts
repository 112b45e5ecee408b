import { Test } from '@nestjs/testing';
import { createClient } from 'redis';
import { createSentinel } from 'redis5';

import { RateLimitModule, RateLimitService, RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// Regression: `redis: { client }` given a connected node-redis client started the app; every store call then
// failed (TypeError: Function.prototype.apply was called on undefined), the breaker opened, and every
// fail-open policy admitted everything. The module then refused node-redis clients at start; it drives them
// now (issue 22), and still refuses, at start, an object that is no client it knows.

describe('regression: a node-redis client given to the module', () => {
  let redis: TestRedis;
  let client: ReturnType<typeof createClient>;
  beforeAll(async () => {
    redis = await startRedis();
    client = createClient({ url: redis.url });
    await client.connect();
  });
  afterAll(async () => {
    client.destroy();
    await redis.stop();
  });

  it('starts the module, whose decisions come from Redis', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { client }, keyPrefix: 'node-redis:' })],
    }).compile();
    await moduleRef.init();
    const limits = moduleRef.get(RateLimitService);
    const policy = { name: 'nr', algorithm: 'fixed-window', limit: 2, window: '1m' } as const;
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push((await limits.consume(policy, 'k')).allowed);
    expect(allowed).toEqual([true, true, false]);
    expect(await client.keys('node-redis:*')).toHaveLength(1);
    await moduleRef.close();
  });

  it('is the client of a RedisRateLimitStore too', async () => {
    const store = new RedisRateLimitStore({ client, keyPrefix: 'node-redis-store:' });
    const policy = validatePolicy({ name: 'nr', algorithm: 'gcra', limit: 1, window: '1m' });
    const decide = async () => (await store.consume([{ policy, key: 'k', cost: 1 }]))[0]?.allowed;
    expect([await decide(), await decide()]).toEqual([true, false]);
  });

  it('names what is missing from an object that is no Redis client at all', () => {
    expect(() => new RedisRateLimitStore({ client: {} as never })).toThrow(
      /an instance of Object \(it has no call, evalsha, eval, script, ping\)/,
    );
  });

  it('stops the start for an object that is no Redis client, saying what is accepted', async () => {
    const compiled = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { client: { isOpen: true } as never } })],
    }).compile();
    await expect(compiled).rejects.toThrow(
      /option redis\.client is an instance of Object \(it has no call, evalsha, eval, script, ping\), which the module cannot drive: give an ioredis or iovalkey Redis or Cluster, a node-redis client, Cluster or Sentinel/,
    );
  });

  it('stops the start for a Sentinel of redis 5, which has no duplicate(), saying what to give instead', async () => {
    const sentinel = createSentinel({ name: 'rl', sentinelRootNodes: [{ host: '127.0.0.1', port: redis.port }] });
    const compiled = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { client: sentinel as never } })],
    }).compile();
    await expect(compiled).rejects.toThrow(
      /option redis\.client is a node-redis 5 Sentinel .*cannot make a connection of its own \(it has no duplicate\(\)\): give a Sentinel of redis 6/,
    );
  });
});
