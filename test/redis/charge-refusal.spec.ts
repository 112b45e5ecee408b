import type { Redis } from 'ioredis';

import { ALGORITHM_CODES } from '../../lib/algorithms/index.js';
import { RATE_LIMIT_SCRIPT } from '../../lib/stores/redis/rate-limit.lua.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { TEST_START_MS } from '../support/time.js';

// The stores refuse to charge a concurrency limit before they call Redis (consume-all.ts' checkChargeable);
// the script refuses too, so that a caller that skips the check gets an error, never a log charged as slots.

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = redis.client();
});
afterAll(() => redis.stop());

it("the script's 'charge' refuses a concurrency limit and leaves its slots as they were", async () => {
  const key = 'rl:{slots:k}';
  // code, limit, window, capacity, then the cost (the script's ARGV after the operation, time and slack)
  const item = (cost: number) => [String(ALGORITHM_CODES.concurrency), '2', '300000', '2', String(cost)];
  const run = (op: string, cost: number) =>
    client.eval(RATE_LIMIT_SCRIPT, 1, key, op, String(TEST_START_MS), '1000', ...item(cost));
  expect(await run('consume', 1)).toEqual([1, 1, 300_000, 0]);
  const before = await client.get(key);
  await expect(run('charge', 1)).rejects.toThrow(/a concurrency limit cannot be charged/);
  expect(await client.get(key)).toBe(before);
});
