import type { Redis } from 'ioredis';

import { RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ReferenceStore } from '../support/reference-store.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { callsOf, itemsDecided } from '../support/redis-commands.js';

let redis: TestRedis;
let admin: Redis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
  client = redis.client();
});
afterAll(async () => {
  client.disconnect();
  admin.disconnect();
  await redis.stop();
});

const calls = (command: string): Promise<number> => callsOf(admin, command);

const perUser = validatePolicy({ name: 'per-user', algorithm: 'sliding-window-counter', limit: 20, window: '1m' });
const burst = validatePolicy({ name: 'burst', algorithm: 'token-bucket', limit: 5, window: '1s', burst: 20 });

describe('consumes gathered into one call while calls are in flight (Redis 7 function)', () => {
  it('decides 200 concurrent requests in fewer calls, each as its own consume', async () => {
    const store = new RedisRateLimitStore({ client, keyPrefix: 'gathered:' });
    await store.load();
    const [fcalls, reads] = [await calls('fcall'), await itemsDecided(admin)];
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        store.consume([
          { policy: perUser, key: `user:${i}`, cost: 1 },
          { policy: burst, key: `user:${i}`, cost: 1 },
        ]),
      ),
    );
    expect(decisions.flat().every((d) => d.allowed)).toBe(true);
    expect(decisions.map((d) => d.map((x) => x.remaining))).toEqual(Array(200).fill([19, 19]));
    // every item read its key once (by GET or, for several items, one MGET); the 200 requests took far fewer calls
    expect((await itemsDecided(admin)) - reads).toBe(400);
    const used = (await calls('fcall')) - fcalls;
    expect(used).toBeGreaterThanOrEqual(2);
    expect(used).toBeLessThanOrEqual(20);
  });

  it('stays exact on one key under concurrency, admitting the first 20 of 60 in the order they came', async () => {
    const store = new RedisRateLimitStore({ client, keyPrefix: 'one-key:' });
    await store.load();
    const decisions = await Promise.all(
      Array.from({ length: 60 }, () => store.consume([{ policy: perUser, key: 'hot', cost: 1 }])),
    );
    expect(decisions.map(([d]) => d?.allowed)).toEqual([...Array(20).fill(true), ...Array(40).fill(false)]);
    expect(decisions.slice(0, 20).map(([d]) => d?.remaining)).toEqual(Array.from({ length: 20 }, (_, i) => 19 - i));
  });

  it('decides runs of requests of the same items (sent once for the run) as the reference does, mixed with other requests', async () => {
    const clock = new FakeClock(1_796_053_232_358);
    const store = new RedisRateLimitStore({ client, clock, keyPrefix: 'runs:' });
    const reference = new ReferenceStore(clock);
    const fw = validatePolicy({ name: 'fw', algorithm: 'fixed-window', limit: 6, window: '1m' });
    const gcra = validatePolicy({ name: 'gcra', algorithm: 'gcra', limit: 5, window: '1m' });
    // runs of one-item and of two-item requests (same policies and costs), breaks of cost and policy, shared keys
    const requests = Array.from({ length: 90 }, (_, i) => {
      const key = `user:${i % 7}`;
      if (i % 13 === 0 || (i >= 40 && i < 50))
        return [
          { policy: fw, key, cost: 1 },
          { policy: gcra, key, cost: 1 },
        ];
      if (i % 11 === 0) return [{ policy: gcra, key, cost: 2 }];
      return [{ policy: fw, key, cost: i % 17 === 0 ? 3 : 1 }];
    });
    const fcalls = await callsOf(admin, 'fcall');
    const decisions = await Promise.all(requests.map((items) => store.consume(items)));
    expect(await callsOf(admin, 'fcall')).toBeLessThan(fcalls + 20);
    for (const [i, items] of requests.entries()) expect(decisions[i]).toEqual(await reference.consume(items));
  });

  it('gathers consumes through the script too, on a Redis without functions', async () => {
    const old = await startRedis({ args: ['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', ''] });
    try {
      const oldClient = old.client();
      const store = new RedisRateLimitStore({ client: oldClient, keyPrefix: 'scripted:' });
      await store.load();
      const decisions = await Promise.all(
        Array.from({ length: 40 }, (_, i) => store.consume([{ policy: perUser, key: `user:${i % 4}`, cost: 1 }])),
      );
      // 10 requests on each of 4 keys, decided in their order
      expect(decisions.map(([d]) => d?.remaining)).toEqual(
        Array.from({ length: 40 }, (_, i) => 19 - Math.floor(i / 4)),
      );
      const evalsha = await callsOf(oldClient, 'evalsha');
      expect(evalsha).toBeGreaterThanOrEqual(2);
      expect(evalsha).toBeLessThanOrEqual(10);
    } finally {
      await old.stop();
    }
  });

  it('sends the requests of a gathered call one by one when Redis refuses it, so only the request at fault fails', async () => {
    const store = new RedisRateLimitStore({ client, keyPrefix: 'wrongtype:' });
    await store.load();
    // a key of another type where a state should be: GET answers WRONGTYPE, which fails the whole script call
    await admin.hset(storageKey('wrongtype:', perUser, 'user:bad'), 'field', 'value');
    const users = ['a', 'b', 'bad', 'c', 'd', 'e', 'f', 'g', 'h', 'i'];
    const settled = await Promise.allSettled(
      users.map((user) => store.consume([{ policy: perUser, key: `user:${user}`, cost: 1 }])),
    );
    expect(settled.map((s) => s.status)).toEqual(users.map((u) => (u === 'bad' ? 'rejected' : 'fulfilled')));
    expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({
      message: expect.stringContaining('WRONGTYPE'),
    });
  });

  it('loads the function again when it was flushed while consumes were gathered, and loses none', async () => {
    const store = new RedisRateLimitStore({ client, keyPrefix: 'flushed:' });
    await store.load();
    // Warm: the store knows the function is there.
    await store.consume([{ policy: perUser, key: 'warm', cost: 1 }]);
    await admin.call('FUNCTION', 'FLUSH');
    const decisions = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.consume([{ policy: perUser, key: `user:${i}`, cost: 1 }])),
    );
    expect(decisions.map(([d]) => d?.remaining)).toEqual(Array(50).fill(19));
    const listed = (await admin.call('FUNCTION', 'LIST')) as unknown[];
    expect(listed).toHaveLength(1);
  });
});
