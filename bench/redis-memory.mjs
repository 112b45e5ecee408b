// Redis memory per tracked key: `node --import ./bench/peers.mjs bench/redis-memory.mjs <redisUrl>`.
// For each algorithm, FLUSHALL, then one consume on each of 10,000 identities (`user:12345`) at the default
// prefix 'rl:' through RedisRateLimitStore; reported: used_memory growth / 10,000 and the mean MEMORY USAGE
// of 200 sampled keys. The same for @nestjs/throttler's Redis storage (@nest-lab/throttler-storage-redis,
// keyed as ThrottlerGuard keys: a SHA-256 of class, handler, throttler name and tracker) and for
// rate-limiter-flexible's RateLimiterRedis. Prints one line of JSON.
import { createHash } from 'node:crypto';

import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

import { RedisRateLimitStore, validatePolicy } from '../dist/index.js';
import { ALGORITHMS } from '../dist/policy/policy.types.js';

const [redisUrl] = process.argv.slice(2);
const KEYS = 10_000;
const SAMPLE = 200;
const BATCH = 200;
// Long enough that no key expires while it is measured (GCRA and token-bucket keys live until the bucket is
// full again: one request of 100 per hour is 36 s).
const LIMIT = 100;
const WINDOW = '1h';

const redis = new Redis(redisUrl);

async function usedMemory() {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)[1]);
}

/** Writes KEYS keys with `write(i)`, BATCH in flight; measures the growth and samples the keys of `match`. */
async function measure(name, write, match) {
  await redis.flushall();
  await redis.call('MEMORY', 'PURGE');
  const before = await usedMemory();
  for (let i = 0; i < KEYS; i += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, KEYS - i) }, (_, j) => write(i + j)));
  }
  const after = await usedMemory();
  const keys = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0' && keys.length < SAMPLE);
  const sample = keys.slice(0, SAMPLE);
  const usage = await Promise.all(sample.map((key) => redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')));
  const values = await Promise.all(sample.map((key) => redis.get(key)));
  const ttls = await Promise.all(sample.map((key) => redis.pttl(key)));
  const mean = (xs) => xs.reduce((a, b) => a + Number(b), 0) / xs.length;
  return {
    name,
    keys: await redis.dbsize(),
    bytesPerKeyUsedMemory: (after - before) / KEYS,
    bytesPerKeyMemoryUsage: mean(usage),
    exampleKey: sample[0],
    exampleValue: values[0],
    meanKeyLength: mean(sample.map((k) => k.length)),
    meanValueLength: mean(values.map((v) => v?.length ?? 0)),
    allHaveTtl: ttls.every((t) => t > 0),
  };
}

const results = [];
const store = new RedisRateLimitStore({ client: redis });
for (const algorithm of ALGORITHMS) {
  // every algorithm of ALGORITHMS: a quota counts per calendar month rather than per window
  const policy = validatePolicy(
    algorithm === 'quota'
      ? { name: 'per-user', algorithm, limit: LIMIT, period: 'month' }
      : { name: 'per-user', algorithm, limit: LIMIT, window: WINDOW },
  );
  results.push(
    await measure(algorithm, (i) => store.consume([{ policy, key: `user:${10_000 + i}`, cost: 1 }]), 'rl:*'),
  );
}

// ThrottlerGuard.generateKey: sha256(`${Class}-${handler}-${throttlerName}-${tracker}`)
const throttlerKey = (i) =>
  createHash('sha256')
    .update(`HelloController-hello-default-user:${10_000 + i}`)
    .digest('hex');
const throttler = new ThrottlerStorageRedisService(redis);
results.push(
  await measure(
    '@nestjs/throttler + @nest-lab/throttler-storage-redis',
    (i) => throttler.increment(throttlerKey(i), 3_600_000, LIMIT, 3_600_000, 'default'),
    '*',
  ),
);

const flexible = new RateLimiterRedis({ storeClient: redis, points: LIMIT, duration: 3600, keyPrefix: 'rlflx' });
results.push(
  await measure('rate-limiter-flexible RateLimiterRedis', (i) => flexible.consume(`user:${10_000 + i}`), '*'),
);

await redis.flushall();
redis.disconnect();
process.stdout.write(`${JSON.stringify(results)}\n`);
